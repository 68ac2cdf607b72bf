"""</script><script>alert("docstring")</script> <!-- not a comment --> ]]> &amp; &lt;"""

SCRIPT = "</script><script>alert('x')</script>"
COMMENT = '<!-- <b>bold</b> -->'
CDATA = "<![CDATA[ ]]> ]]>"
AMP = "a && b & c &lt; &#60; &"
QUOTES = "\"' `backtick` ' \" \\"
TAGS = '<pre></pre></code></body></html><textarea>'


class Evil:
    """<img src=x onerror=alert(1)>"""

    def render(self, x="<a href='javascript:alert(1)'>"):  # </pre> in a comment
        return f"<{x}>" + SCRIPT


def main():  # a ref to Evil below
    return Evil().render()
