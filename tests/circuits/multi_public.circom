pragma circom 2.0.0;

// Several public inputs and outputs, so the IC query has many points and the
// public signals' order (outputs first, then public inputs) gets exercised.
// Public: out[3] (outputs), then x[3], y (public inputs); s and t stay private.
template MultiPublic() {
    signal input x[3];
    signal input y;
    signal input s;
    signal input t;
    signal output out[3];

    signal s2;
    signal xs[3];
    s2 <== s * s;
    for (var i = 0; i < 3; i++) {
        xs[i] <== x[i] * s2;
    }
    out[0] <== xs[0] + y * t;
    out[1] <== xs[1] * xs[2];
    // A negative coefficient and a constant term land in the matrices too.
    out[2] <== (t - 7) * (y + 5 * s);
}

component main {public [x, y]} = MultiPublic();
