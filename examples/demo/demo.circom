pragma circom 2.0.0;

// zktensor's demo circuit: "I know a 64-bit secret whose keyed MiMC-style hash is
// `hash`", without revealing the secret.
//
// - a range check: the secret is split into 64 bits, each constrained to 0 or 1,
//   recomposed and compared (65 constraints; a witness of mostly 0/1 values);
// - 40 rounds of x -> (x + key + c_r)^7 (4 multiplications per round: 160
//   constraints). The round constants are made up: this is a demo, not MiMC.
//
// Public: the key (input) and the hash (output). About 226 constraints, a
// domain of 2^8 points: small enough to bundle its keys in the repository.

template Demo(ROUNDS, BITS) {
    signal input secret;
    signal input key;
    signal output hash;

    signal bits[BITS];
    var lc = 0;
    var e = 1;
    for (var i = 0; i < BITS; i++) {
        bits[i] <-- (secret >> i) & 1;
        bits[i] * (bits[i] - 1) === 0;
        lc += bits[i] * e;
        e = e + e;
    }
    lc === secret;

    signal x[ROUNDS + 1];
    signal t2[ROUNDS];
    signal t4[ROUNDS];
    signal t6[ROUNDS];
    x[0] <== secret;
    for (var r = 0; r < ROUNDS; r++) {
        var c = (r + 1) * (r + 1) * (r + 1) * 982451653 + 7;
        t2[r] <== (x[r] + key + c) * (x[r] + key + c);
        t4[r] <== t2[r] * t2[r];
        t6[r] <== t4[r] * t2[r];
        x[r + 1] <== t6[r] * (x[r] + key + c);
    }
    hash <== x[ROUNDS] + key;
}

component main {public [key]} = Demo(40, 64);
