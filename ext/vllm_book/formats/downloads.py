"""Downloadable files (``{download}``) in every edition.

The HTML edition ships each file under ``_downloads/<md5 of its source path>/<name>`` (Sphinx's own
``copy_download_files``).  An EPUB or a PDF cannot offer a Markdown template as a file: an EPUB reading system
opens only its manifest's media types (epubcheck rejects a link to anything else), and a PDF has no attachment
the book could rely on.  So in those editions the link goes to the same file of the online HTML edition
(``vllm_book_online_base`` + ``_downloads/…``: the path is the digest of the source path, identical on every
machine), and the EPUB leaves the copied files out of its manifest instead of warning about their media type.
"""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.builders import Builder
from sphinx.environment import BuildEnvironment
from sphinx.transforms.post_transforms import SphinxPostTransform


def ships_files(builder: type[Builder] | Builder) -> bool:
    """The builder writes a browsable site that holds the downloaded files itself."""
    return builder.format == "html" and not builder.name.startswith("epub")


def online_url(base: str, dest: str) -> str:
    return base.rstrip("/") + "/_downloads/" + str(dest).replace("\\", "/")


class OnlineDownloads(SphinxPostTransform):
    """``download_reference`` → a reference to the online copy (EPUB, PDF and other non-site builders)."""

    default_priority = 5

    def is_supported(self) -> bool:
        return not ships_files(self.env._builder_cls)  # as SphinxPostTransform.is_supported reads it

    def run(self, **kwargs: object) -> None:
        base = self.config.vllm_book_online_base
        for node in list(self.document.findall(addnodes.download_reference)):
            dest = node.get("filename")
            if not dest:  # a missing file: Sphinx has warned already (download file not readable)
                node.replace_self(nodes.inline("", "", *node.children))
                continue
            uri = online_url(base, dest)
            node.replace_self(nodes.reference("", "", *node.children, refuri=uri, internal=False,
                                              classes=["download-online"], reftitle=uri))


def _keep_downloads_out_of_epub(app: Sphinx, env: BuildEnvironment) -> None:
    if not app.builder.name.startswith("epub"):
        return
    names = [f"_downloads/{str(dest).replace(chr(92), '/')}" for _docs, dest in env.dlfiles.values()]
    app.config.epub_exclude_files = [*app.config.epub_exclude_files, *names]


def setup(app: Sphinx) -> None:
    app.add_post_transform(OnlineDownloads)
    app.connect("env-updated", _keep_downloads_out_of_epub)
