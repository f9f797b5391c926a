// Batch oracle for the verifier tests: run snarkjs's own groth16.verify on many
// cases in one node process (starting the snarkjs CLI costs ~0.5 s per call).
// Usage: node snarkjs_verify.cjs <fixtures build dir> <cases.json>
// cases.json: [{"vk": ..., "public": [...], "proof": ...}, ...]
// Prints one JSON array: true/false per case, or "error: <message>" where snarkjs throws.
const fs = require("fs");
const path = require("path");

const snarkjs = require(path.join(process.argv[2], "node_modules", "snarkjs", "build", "main.cjs"));
const cases = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));

(async () => {
    const out = [];
    for (const c of cases) {
        try {
            out.push(await snarkjs.groth16.verify(c.vk, c.public, c.proof));
        } catch (e) {
            out.push("error: " + e.message);
        }
    }
    console.log(JSON.stringify(out));
    process.exit(0);  // snarkjs keeps worker threads alive
})();
