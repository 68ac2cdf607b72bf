// Render Mermaid diagrams to PDF and/or PNG in ONE browser page, with the pinned mermaid package.
//
//   node mermaid_render.mjs <node_modules dir> <job.json>
//   job: {"chromium": path, "args": [...], "outputs": [{"format": "pdf"|"png", "scale": n}, ...],
//         "background": "white", "config": {...mermaid.initialize options...},
//         "items": [{"code": "...", "outs": ["/abs/path per output", ...]}]}
//   → stdout, one JSON line per item: {"i": n, "ok": true} | {"i": n, "ok": false, "message": "..."}
//
// Each diagram is laid out once and written in every output format (the EPUB's PNG and the PDF's
// vector PDF from the same SVG); the viewport's pixel scale is set per output, as mermaid-cli would.
//
// Why not `mmdc`: mermaid-cli opens a new page per diagram and imports mermaid (and the ELK
// and ZenUML modules) into each one again — about 0.6 s a diagram on a 2-core machine, most of
// it module loading.  Here mermaid.min.js is loaded once and every diagram is rendered into
// the same container.  The page and the output follow mermaid-cli's renderMermaid (src/index.js
// of @mermaid-js/mermaid-cli 11.x): an 800×600 viewport at deviceScaleFactor `scale`, the
// default body margin, `pdfFit`-style PDF pages (the SVG's box plus the margin on each side),
// PNG screenshots clipped to the SVG.  ELK layouts, ZenUML and icon packs are not registered
// (the book uses none of them; mermaid's own error names the diagram type if one appears).
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const [nmArg, jobFile] = process.argv.slice(2);
const nm = path.resolve(nmArg);
const job = JSON.parse(readFileSync(jobFile, 'utf8'));
const require = createRequire(path.join(nm, 'noop.js'));
const puppeteer = require('puppeteer-core');

const say = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

const browser = await puppeteer.launch({
  executablePath: job.chromium,
  args: job.args,
  headless: true,
});
try {
  const page = await browser.newPage();
  page.on('console', (msg) => process.stderr.write(`[browser] ${msg.text()}\n`));
  const viewport = (scale) => ({ width: 800, height: 600, deviceScaleFactor: scale || 1 });
  await page.setViewport(viewport(job.outputs[0].scale));
  await page.setContent('<!doctype html><html><body><div id="container"></div></body></html>');
  await page.addScriptTag({ path: path.join(nm, 'mermaid', 'dist', 'mermaid.min.js') });
  await page.evaluate(async (config, background) => {
    document.body.style.background = background;
    await Promise.all(Array.from(document.fonts, (font) => font.load()));
    window.mermaid.initialize({ startOnLoad: false, ...config });
  }, job.config || {}, job.background || 'white');

  for (const [i, item] of job.items.entries()) {
    try {
      await page.evaluate(async (code, id, background) => {
        const container = document.getElementById('container');
        container.innerHTML = '';
        for (const stray of document.querySelectorAll('body > :not(#container)')) stray.remove();
        const { svg } = await window.mermaid.render(id, code);
        container.innerHTML = svg;
        container.getElementsByTagName('svg')[0].style.backgroundColor = background;
      }, item.code, `vllm-book-diagram-${i}`, job.background || 'white');
      const clip = await page.$eval('#container svg', (svg) => {
        const r = svg.getBoundingClientRect();
        return { x: r.left, y: r.top, width: r.width, height: r.height };
      });
      for (const [k, output] of job.outputs.entries()) {
        let data;
        if (output.format === 'pdf') {
          await page.setViewport(viewport(output.scale));
          data = await page.pdf({
            omitBackground: job.background === 'transparent',
            width: `${Math.ceil(clip.width) + clip.x * 2}px`,
            height: `${Math.ceil(clip.height) + clip.y * 2}px`,
            pageRanges: '1-1',
          });
        } else {
          const box = {
            x: Math.floor(clip.x), y: Math.floor(clip.y),
            width: Math.ceil(clip.width), height: Math.ceil(clip.height),
          };
          await page.setViewport({ ...viewport(output.scale), width: box.x + box.width, height: box.y + box.height });
          data = await page.screenshot({ clip: box, omitBackground: job.background === 'transparent' });
        }
        writeFileSync(item.outs[k], data);
      }
      await page.setViewport(viewport(job.outputs[0].scale));
      say({ i, ok: true });
    } catch (err) {
      say({ i, ok: false, message: String(err && err.message ? err.message : err).split('\n').slice(0, 4).join(' | ') });
    }
  }
} finally {
  await browser.close();
}
