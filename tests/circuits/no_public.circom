pragma circom 2.0.0;

// No public signals at all: nPublic = 0, IC has the single point for the
// constant wire, and public.json is an empty array.
// Knowledge of a, b with (a + b)^3 = 8000 and a != b (via an inverse).
template NoPublic() {
    signal input a;
    signal input b;
    signal sum;
    signal sq;
    signal inv;

    sum <== a + b;
    sq <== sum * sum;
    sq * sum === 8000;
    inv <-- 1 / (a - b);
    inv * (a - b) === 1;
}

component main = NoPublic();
