/* Accessibility fixes of the theme's markup, found by axe-core (tests/reader/test_reader.py).
 * - The sidebar's collapsible sections are <summary> elements holding only a decorative chevron: give them a
 *   name (axe: summary-name, serious).
 * - The search field button's aria-label ("搜索") differs from its visible text ("搜索 Ctrl+K"): drop it, so
 *   the visible text is its name (axe: label-content-name-mismatch, serious).
 */
"use strict";
(() => {
  const zh = (document.documentElement.lang || "").startsWith("zh");
  const label = zh ? "展开或收起本节目录" : "Expand or collapse this section";
  const fix = () => {
    document.querySelectorAll("nav summary:not([aria-label]), .bd-sidebar summary:not([aria-label])")
      .forEach((s) => { if (!s.textContent.trim()) s.setAttribute("aria-label", label); });
    document.querySelectorAll(".search-button-field[aria-label]").forEach((b) => b.removeAttribute("aria-label"));
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fix);
  else fix();
})();
