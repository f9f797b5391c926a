#!/usr/bin/env bash
# Rebuild the bundled demo files (needs node/npm; `zktensor demo` itself does not):
#   demo.r1cs            circom2 demo.circom --r1cs --wasm --prime bn128
#   demo.wtns            snarkjs wtns calculate (input.json)
#   demo.zkey            snarkjs groth16 setup with a BN254 powers of tau ($ZKT_PTAU_BN254,
#                        else the one scripts/fixtures.sh makes), then one zkey contribute
#                        with fixed, public entropy
#   verification_key.json  snarkjs zkey export verificationkey
# The tools are the ones scripts/fixtures.sh installs (tests/fixtures/build/node_modules).
# The key's entropy is public: a demo key, not for anything that matters.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD="${ZKT_FIXTURES_BUILD:-$ROOT/tests/fixtures/build}"
# fixtures.sh installs snarkjs and circom2 and, without ZKT_PTAU_BN254, makes the ptau
PTAU="${ZKT_PTAU_BN254:-$BUILD/ptau/bn128_pot12_final.ptau}"
[ -f "$BUILD/node_modules/snarkjs/build/cli.cjs" ] && [ -f "$PTAU" ] || bash "$ROOT/scripts/fixtures.sh" multiplier
SNARKJS=(node "$BUILD/node_modules/snarkjs/build/cli.cjs")
CIRCOM=(node "$BUILD/node_modules/circom2/cli.js")
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
cd "$HERE"
"${CIRCOM[@]}" demo.circom --r1cs --wasm --prime bn128 -o "$TMP" >/dev/null
"${SNARKJS[@]}" wtns calculate "$TMP/demo_js/demo.wasm" input.json "$TMP/demo.wtns"
"${SNARKJS[@]}" groth16 setup "$TMP/demo.r1cs" "$PTAU" "$TMP/demo_0000.zkey" >/dev/null
"${SNARKJS[@]}" zkey contribute "$TMP/demo_0000.zkey" "$TMP/demo.zkey" --name="zktensor demo" \
    -e="zktensor demo: public entropy, not a secure key" >/dev/null
"${SNARKJS[@]}" zkey export verificationkey "$TMP/demo.zkey" "$TMP/verification_key.json" >/dev/null
"${SNARKJS[@]}" groth16 prove "$TMP/demo.zkey" "$TMP/demo.wtns" "$TMP/proof.json" "$TMP/public.json"
"${SNARKJS[@]}" groth16 verify "$TMP/verification_key.json" "$TMP/public.json" "$TMP/proof.json" >/dev/null
cp "$TMP/demo.r1cs" "$TMP/demo.wtns" "$TMP/demo.zkey" "$TMP/verification_key.json" "$TMP/public.json" "$HERE/"
ls -l "$HERE"
