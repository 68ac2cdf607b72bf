"""SVG images in the PDF: converted to vector PDF with cairosvg (rinohtype places PDF, PNG and JPEG only).

The HTML and EPUB builders take ``image/svg+xml`` as it is; rinohtype 0.5.6 does not
(``RinohBuilder.supported_image_types`` is PDF/PNG/JPEG), so a chapter's ``![…](figures/x.svg)`` would
be dropped from the PDF with "no matching candidate for image URI".  This is Sphinx's own extension
point for that case (an :class:`~sphinx.transforms.post_transforms.images.ImageConverter`, like
``sphinx.ext.imgconverter``, which would need ImageMagick and gives pixels): the SVG becomes a one-page
PDF, which rinohtype places as a vector form XObject, the way the Mermaid diagrams are placed.
cairosvg is already a dependency (rinohtype renders math through it).  The experiments' figures
(``source/07-hands-on/figures/*.svg``) draw their text as paths, so the conversion needs no font.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx
from sphinx.transforms.post_transforms.images import ImageConverter
from sphinx.util import logging

logger = logging.getLogger(__name__)


class SvgToPdfConverter(ImageConverter):
    conversion_rules = [("image/svg+xml", "application/pdf")]

    def is_available(self) -> bool:
        try:
            import cairosvg  # noqa: F401
        except (ImportError, OSError) as exc:  # OSError: libcairo2 missing
            logger.warning("SVG images are left out of the PDF: cairosvg unavailable (%s); "
                           "apt-get install libcairo2", exc)
            return False
        return True

    def convert(self, _from: str | Path, _to: str | Path) -> bool:
        import cairosvg

        try:
            cairosvg.svg2pdf(url=str(_from), write_to=str(_to))
        except Exception as exc:  # a broken SVG names its file, and the build goes on
            logger.warning("cannot convert %s to PDF: %s", _from, exc)
            return False
        return True


def setup(app: Sphinx) -> None:
    app.add_post_transform(SvgToPdfConverter)
