pragma circom 2.0.0;

// Many Num2Bits-style range checks: each value is split into bits, every bit is
// constrained to be 0 or 1, and the bits must recompose the value. The witness is
// therefore mostly 0/1, the case the sparse-scalar MSM path is built for.
// N values of BITS bits each: N*BITS booleanity constraints + N recomposition
// constraints (40*32 + 40 = 1320 constraints, domain 2^11).

template Bits(BITS) {
    signal input in;
    signal output bits[BITS];
    var lc = 0;
    var e = 1;
    for (var i = 0; i < BITS; i++) {
        bits[i] <-- (in >> i) & 1;
        bits[i] * (bits[i] - 1) === 0;
        lc += bits[i] * e;
        e = e + e;
    }
    lc === in;
}

template RangeCheck(N, BITS) {
    signal input in[N];
    signal output sum;
    component b[N];
    var acc = 0;
    for (var i = 0; i < N; i++) {
        b[i] = Bits(BITS);
        b[i].in <== in[i];
        acc += in[i];
    }
    sum <== acc;
}

component main = RangeCheck(40, 32);
