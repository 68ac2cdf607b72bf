// Parse Mermaid diagrams with the pinned mermaid package, without a browser.
//
//   node mermaid_check.mjs <node_modules dir>   < {"diagrams": ["flowchart LR\n A-->B", ...]}
//   → stdout: {"version": "11.14.0", "results": [{"ok": true} | {"ok": false, "line": 3, "message": "..."}]}
//
// mermaid.parse() needs no DOM except DOMPurify's hooks (registered at import time by
// some diagram types): without a window DOMPurify exports a stub, so those hooks are
// made no-ops here; parse() never sanitises or renders anything.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const log = (...a) => process.stderr.write(a.map(String).join(' ') + '\n');
console.log = console.info = console.debug = console.warn = log;

const nm = process.argv[2];
const input = JSON.parse(readFileSync(0, 'utf8'));
const { default: DOMPurify } = await import(pathToFileURL(path.join(nm, 'dompurify/dist/purify.es.mjs')).href);
if (typeof DOMPurify.addHook !== 'function') {
  Object.assign(DOMPurify, {
    addHook() {}, removeHook() {}, removeHooks() {}, removeAllHooks() {},
    sanitize: (s) => String(s), setConfig() {}, clearConfig() {}, isValidAttribute: () => true,
  });
}
// The one browser API a parse path touches: sequenceDiagram `box <color> <title>` asks
// window.CSS.supports("color", word) to tell a colour from the first word of the title.
const NAMED_COLORS = new Set(('aliceblue antiquewhite aqua aquamarine azure beige bisque black blanchedalmond blue ' +
  'blueviolet brown burlywood cadetblue chartreuse chocolate coral cornflowerblue cornsilk crimson cyan darkblue ' +
  'darkcyan darkgoldenrod darkgray darkgreen darkgrey darkkhaki darkmagenta darkolivegreen darkorange darkorchid ' +
  'darkred darksalmon darkseagreen darkslateblue darkslategray darkslategrey darkturquoise darkviolet deeppink ' +
  'deepskyblue dimgray dimgrey dodgerblue firebrick floralwhite forestgreen fuchsia gainsboro ghostwhite gold ' +
  'goldenrod gray green greenyellow grey honeydew hotpink indianred indigo ivory khaki lavender lavenderblush ' +
  'lawngreen lemonchiffon lightblue lightcoral lightcyan lightgoldenrodyellow lightgray lightgreen lightgrey ' +
  'lightpink lightsalmon lightseagreen lightskyblue lightslategray lightslategrey lightsteelblue lightyellow lime ' +
  'limegreen linen magenta maroon mediumaquamarine mediumblue mediumorchid mediumpurple mediumseagreen ' +
  'mediumslateblue mediumspringgreen mediumturquoise mediumvioletred midnightblue mintcream mistyrose moccasin ' +
  'navajowhite navy oldlace olive olivedrab orange orangered orchid palegoldenrod palegreen paleturquoise ' +
  'palevioletred papayawhip peachpuff peru pink plum powderblue purple rebeccapurple red rosybrown royalblue ' +
  'saddlebrown salmon sandybrown seagreen seashell sienna silver skyblue slateblue slategray slategrey snow ' +
  'springgreen steelblue tan teal thistle tomato turquoise violet wheat white whitesmoke yellow yellowgreen ' +
  'transparent currentcolor').split(' '));
if (typeof globalThis.window === 'undefined') {
  globalThis.window = {
    CSS: {
      supports: (prop, value) => prop === 'color' &&
        (NAMED_COLORS.has(String(value).toLowerCase()) || /^(rgba?|hsla?)\s*\(.*\)$/.test(String(value))),
    },
  };
}

const { default: mermaid } = await import(pathToFileURL(path.join(nm, 'mermaid/dist/mermaid.core.mjs')).href);
mermaid.initialize({ startOnLoad: false, securityLevel: 'strict' });
const version = JSON.parse(readFileSync(path.join(nm, 'mermaid/package.json'), 'utf8')).version;

const results = [];
for (const text of input.diagrams) {
  try {
    await mermaid.parse(text);
    results.push({ ok: true });
  } catch (e) {
    let msg = String((e && e.message) || e);
    if (e instanceof ReferenceError || e instanceof TypeError) {
      // a browser API this checker does not provide: say so instead of blaming the diagram
      msg = `the checker cannot parse this diagram outside a browser (${e.name}: ${e.message}); ` +
        'the syntax may be fine: check it at https://mermaid.live and extend ext/vllm_book/sync/mermaid_check.mjs';
    }
    const m = /line (\d+)/.exec(msg);
    let line = m ? Number(m[1]) : (e && e.hash && e.hash.loc ? e.hash.loc.first_line : 0);
    results.push({ ok: false, line, message: msg });
  }
}
process.stdout.write(JSON.stringify({ version, results }));
