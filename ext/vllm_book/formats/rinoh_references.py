"""``title-guard``: rinohtype's guard against a title that refers to itself, scoped to what it guards.

A title reference (the text of a table-of-contents entry, a running header) expands to the target's title, and
rinohtype 0.5.6 protects that expansion against a title that contains a reference to itself with a set,
``Document.title_targets``: ``ReferenceBase.children`` adds the target, *yields* the title, and clears the set
when it is resumed after the yield.  Text is laid out lazily, so the generator is suspended there while the
consumer sets the title's words — and when the line breaker gives a line back (a word that does not fit is
taken out again, ``ParagraphState.restore``) it drops the generator and lays the paragraph out again from its
saved position.  The set is never cleared, the second expansion of the same entry finds its own target in it,
takes it for a circular reference and expands to the *reference* text instead of the title: the paragraph's
text changes under the saved position and rinohtype dies on it ("generator raised StopIteration" in
``ParagraphState._spans_to_words``), or, with a shorter replacement, sets a wrong entry with a "Circular
'title' reference" warning.  Chinese titles break between any two characters and never give a word back; the
English edition's long Latin chapter titles in the table of contents do.

The patch keeps rinohtype's rule — a title reference met while its own target's title is being expanded, or
inside the element it points at, is circular and set as a reference — but holds the target in the set only while
the expansion is actually running: around each step of the span generator (``spans``) and around a whole
``to_string``, which is not lazy.  A generator that is dropped half-way therefore leaves nothing behind, and a
real cycle still recurses through a running step, where it is caught.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def apply() -> None:
    from rinoh.reference import ReferenceBase, ReferenceType
    from rinoh.text import ErrorText, SingleStyledText, Styled

    def target_text(self: Any, container: Any, type_: Any) -> Any:
        """What ``children`` yields for *type_* (rinohtype's lookup, minus its title bookkeeping)."""
        document = container.document
        if type_ == ReferenceType.CUSTOM:
            return self.custom_title
        target_id = self.target_id(document)
        try:
            text = document.get_reference(target_id, type_)
        except KeyError:
            if self.custom_title:
                text = self.custom_title
            elif self.get_style("quiet", container):
                text = ""
            else:
                self.warn(f"Target '{target_id}' has no '{type_}' reference", container)
                text = ErrorText("??", parent=self)
        return text.copy(parent=self) if isinstance(text, Styled) else SingleStyledText(text, parent=self)

    def circular(self: Any, container: Any) -> bool:
        document = container.document
        target_id = self.target_id(document)
        if target_id in document.title_targets or target_id in set(self.referenceable_ids):
            self.warn("Circular 'title' reference replaced with 'reference' reference", container)
            return True
        return False

    def resolved_type(self: Any, container: Any, type_: Any = None) -> Any:
        type_ = type_ or self.type or self.get_style("type", container)
        if type_ == ReferenceType.TITLE and circular(self, container):
            return ReferenceType.REFERENCE
        return type_

    def children(self: Any, container: Any, type: Any = None) -> Iterator[Any]:  # noqa: A002 (rinohtype's name)
        if container is None:
            yield "$REF({})".format(type or self.type or self.get_style("type", container))
            return
        text = target_text(self, container, resolved_type(self, container, type))
        if text is not None:
            yield text

    def spans(self: Any, container: Any) -> Iterator[Any]:
        type_ = resolved_type(self, container)
        if type_ != ReferenceType.TITLE:
            yield from _expand(self, container, type_)
            return
        targets = container.document.title_targets
        target_id = self.target_id(container.document)
        steps = _expand(self, container, type_)
        while True:
            targets.add(target_id)
            try:
                span = next(steps)
            except StopIteration:
                return
            finally:
                targets.discard(target_id)
            yield span

    def _expand(self: Any, container: Any, type_: Any) -> Iterator[Any]:
        text = target_text(self, container, type_)
        if text is None:
            return
        container.register_styled(text)
        yield from text.wrapped_spans(container)

    def to_string(self: Any, flowable_target: Any) -> str:
        type_ = resolved_type(self, flowable_target)
        text = target_text(self, flowable_target, type_)
        if text is None:
            return ""
        if type_ != ReferenceType.TITLE:
            return text.to_string(flowable_target)
        targets = flowable_target.document.title_targets
        target_id = self.target_id(flowable_target.document)
        targets.add(target_id)
        try:
            return text.to_string(flowable_target)
        finally:
            targets.discard(target_id)

    ReferenceBase.children = children
    ReferenceBase.spans = spans
    ReferenceBase.to_string = to_string
