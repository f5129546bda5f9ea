// Replay flakecore's language-neutral schema vectors with Ajv (JSON Schema draft 2020-12).
//
// Why this exists: the schemas are a cross-language contract, so a rule that
// only Python's jsonschema enforces is not a rule. This runner loads every
// schemas/*.v1.json into Ajv exactly as a Node.js runner would (strict mode,
// all errors, nothing fetched over the network), compiles each one, and checks
// that every vector in schemas/tests/*.json gets the answer it records.
//
// Usage: npm ci --prefix schemas/node && node schemas/node/run-vectors.mjs
// Prints "node vectors: N passed, M failed" and exits non-zero on any failure,
// on a schema Ajv refuses, or when no vector ran at all.

import { readdirSync, readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";

const schemasDir = new URL("../", import.meta.url);
const vectorsDir = new URL("../tests/", import.meta.url);

function readJson(url) {
  return JSON.parse(readFileSync(url, "utf8"));
}

function listJson(dirUrl, suffix) {
  return readdirSync(dirUrl)
    .filter((name) => name.endsWith(suffix))
    .sort();
}

// strict: true turns on strictSchema, strictNumbers, strictTypes, strictTuples
// and strictRequired; the schemas are written to pass all of them (no union
// "type" arrays other than with null, a "type" beside every typed keyword).
// No network: loadSchema is not set, so an unknown $ref is a compile error.
const ajv = new Ajv2020({ strict: true, allErrors: true });

let passed = 0;
let failed = 0;
const failures = [];

function fail(message) {
  failed += 1;
  failures.push(message);
}

const schemaFiles = listJson(schemasDir, ".v1.json");
const ids = [];
for (const name of schemaFiles) {
  const schema = readJson(new URL(name, schemasDir));
  const expectedId = `https://flakecore.invalid/schemas/${name}`;
  if (schema.$id !== expectedId) {
    fail(`${name}: $id is ${JSON.stringify(schema.$id)}, expected ${expectedId}`);
    continue;
  }
  try {
    ajv.addSchema(schema);
    ids.push(schema.$id);
  } catch (error) {
    fail(`${name}: Ajv refuses the schema: ${error.message}`);
  }
}
let compiled = 0;
for (const id of ids) {
  try {
    ajv.getSchema(id); // compiles it; throws on anything strict mode refuses
    compiled += 1;
  } catch (error) {
    fail(`${id}: Ajv cannot compile it: ${error.message}`);
  }
}

let vectorCount = 0;
for (const name of listJson(vectorsDir, ".json")) {
  const groups = readJson(new URL(name, vectorsDir));
  for (const group of groups) {
    let validate;
    try {
      validate = ajv.compile(group.schema);
    } catch (error) {
      fail(`${name}: ${group.description}: cannot compile ${JSON.stringify(group.schema)}: ${error.message}`);
      continue;
    }
    for (const test of group.tests) {
      vectorCount += 1;
      const valid = validate(test.data);
      if (valid === test.valid) {
        passed += 1;
      } else {
        const why = valid ? "accepted" : JSON.stringify(validate.errors?.slice(0, 3));
        fail(`${name}: ${group.description}: ${test.description}: expected valid=${test.valid}, got ${why}`);
      }
    }
  }
}

for (const message of failures) {
  console.error(`FAIL ${message}`);
}
if (vectorCount === 0) {
  console.error("no vectors found: that is a failure, not a pass");
}
console.log(`node schemas: ${compiled} of ${schemaFiles.length} compiled by Ajv (draft 2020-12, strict)`);
console.log(`node vectors: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 && vectorCount > 0 ? 0 : 1);
