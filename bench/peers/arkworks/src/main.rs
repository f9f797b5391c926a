//! arkworks peer for zktensor's benchmarks (bench/peers.py builds and runs it).
//!
//! `ark-peer-bench [mul|msm|fft]` times arkworks on this machine and prints one CSV
//! line per measurement, the format bench/peers.py parses:
//!
//!     system,op,curve,size,threads,runs,min_ms,median_ms,extra
//!
//! Threads come from RAYON_NUM_THREADS. Timing is the same as bench/common.py's
//! `time_runs`: one warm-up call, then timed calls; a call during which other
//! processes used more than 3% of the cores (at least 20 ms, /proc/stat's
//! resolution) is not kept and another is made, up to four times the runs asked
//! for. The median is the upper median of the kept calls.

use std::hint::black_box;
use std::time::Instant;

use ark_ec::{CurveGroup, VariableBaseMSM};
use ark_ff::{Field, PrimeField, UniformRand};
use ark_poly::{EvaluationDomain, Radix2EvaluationDomain};
use ark_std::rand::{rngs::StdRng, SeedableRng};
use rayon::prelude::*;

const SYSTEM: &str = "arkworks-0.6";

// ---------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------

/// Clock ticks per second of /proc/stat and /proc/self/stat (USER_HZ, 100 on Linux).
const TICKS_PER_S: f64 = 100.0;

/// (machine busy, this process's CPU) in seconds. Busy is user + nice + system +
/// irq + softirq + steal of the first /proc/stat line; idle and iowait are not work.
fn cpu_seconds() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let total: Vec<f64> = stat.lines().next().unwrap_or("").split_whitespace().skip(1)
        .map(|v| v.parse().unwrap_or(0.0)).collect();
    let busy = [0usize, 1, 2, 5, 6, 7].iter().map(|&i| total.get(i).copied().unwrap_or(0.0)).sum::<f64>();
    // /proc/self/stat: the command name may hold spaces, so count fields after its ')'
    let me = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<f64> = me.rsplit(')').next().unwrap_or("").split_whitespace()
        .map(|v| v.parse().unwrap_or(0.0)).collect();
    let own = fields.get(11).copied().unwrap_or(0.0) + fields.get(12).copied().unwrap_or(0.0); // utime, stime
    (busy / TICKS_PER_S, own / TICKS_PER_S)
}

struct Timing {
    min_ms: f64,
    median_ms: f64,
    clean: usize,
    tried: usize,
}

fn time_runs(runs: usize, mut call: impl FnMut()) -> Timing {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as f64;
    call();
    let (mut kept, mut every) = (Vec::new(), Vec::new());
    let mut tried = 0;
    while kept.len() < runs && tried < 4 * runs {
        tried += 1;
        let (busy0, own0) = cpu_seconds();
        let start = Instant::now();
        call();
        let wall = start.elapsed().as_secs_f64();
        let (busy1, own1) = cpu_seconds();
        let others = (busy1 - busy0) - (own1 - own0);
        every.push(wall * 1e3);
        if others <= (0.03 * wall * cores).max(0.020) {
            kept.push(wall * 1e3);
        }
    }
    let clean = kept.len();
    let mut v = if kept.is_empty() { every } else { kept };
    v.sort_by(f64::total_cmp);
    Timing { min_ms: v[0], median_ms: v[v.len() / 2], clean, tried }
}

fn report(op: &str, curve: &str, size: usize, threads: usize, t: &Timing, note: &str) {
    println!(
        "{SYSTEM},{op},{curve},{size},{threads},{},{:.3},{:.3},{note}; clean {}/{} runs",
        t.clean, t.min_ms, t.median_ms, t.clean, t.tried
    );
}

// ---------------------------------------------------------------------------
// Field multiplication (one thread)
// ---------------------------------------------------------------------------

/// Two forms: a dependent chain x = x * y (each product waits for the previous one:
/// latency) and a[i] = a[i] * b[i] over arrays that fit in L2 (independent products:
/// throughput), the form zktensor's elementwise kernels are compared with.
fn bench_mul<F: Field>(prefix: &str, rng: &mut StdRng) {
    const CHAIN: usize = 20_000_000;
    let (start, factor) = (F::rand(rng), F::rand(rng));
    let t = time_runs(5, || {
        let mut x = black_box(start);
        let y = black_box(factor);
        for _ in 0..CHAIN {
            x *= y;
        }
        black_box(x);
    });
    let ns = t.median_ms * 1e6 / CHAIN as f64;
    report(&format!("{prefix}_mul_chain"), "bn254", CHAIN, 1, &t, &format!("{ns:.2} ns/mul (median)"));

    const LEN: usize = 4096;
    const PASSES: usize = 5000;
    let mut a: Vec<F> = (0..LEN).map(|_| F::rand(rng)).collect();
    let b: Vec<F> = (0..LEN).map(|_| F::rand(rng)).collect();
    let t = time_runs(5, || {
        for _ in 0..PASSES {
            a.iter_mut().zip(&b).for_each(|(x, y)| *x *= y);
            black_box(&mut a);
        }
    });
    let ns = t.median_ms * 1e6 / (LEN * PASSES) as f64;
    report(&format!("{prefix}_mul_array"), "bn254", LEN * PASSES, 1, &t,
           &format!("{ns:.2} ns/mul (median); a[i] *= b[i], {LEN} elements"));
}

// ---------------------------------------------------------------------------
// G1 multi-scalar multiplication
// ---------------------------------------------------------------------------

/// n distinct affine points without n scalar multiplications: an arithmetic
/// progression P + i*S, a few thousand scalar multiplications for the chunk starts
/// and one addition per point, in parallel, then one batch normalisation.
fn progression<G: CurveGroup>(n: usize, rng: &mut StdRng) -> Vec<G::Affine> {
    const CHUNK: usize = 1024;
    let (p, s) = (G::rand(rng), G::rand(rng));
    let points: Vec<G> = (0..n.div_ceil(CHUNK)).into_par_iter().flat_map_iter(|c| {
        let first = c * CHUNK;
        let mut q = p + s * G::ScalarField::from(first as u64);
        (first..n.min(first + CHUNK)).map(move |_| {
            let out = q;
            q += s;
            out
        })
    }).collect();
    G::normalize_batch(&points)
}

fn bench_msm<G: CurveGroup + VariableBaseMSM>(curve: &str, sizes: &[(u32, usize)], threads: usize, rng: &mut StdRng)
where
    G::ScalarField: PrimeField,
{
    let largest = 1usize << sizes.iter().map(|s| s.0).max().unwrap();
    let bases = progression::<G>(largest, rng);
    let scalars: Vec<G::ScalarField> = (0..largest).map(|_| G::ScalarField::rand(rng)).collect();
    for &(log_n, runs) in sizes {
        let n = 1usize << log_n;
        let t = time_runs(runs, || {
            black_box(G::msm(&bases[..n], &scalars[..n]).expect("as many scalars as bases"));
        });
        report("g1_msm", curve, n, threads, &t, "VariableBaseMSM::msm; uniform random scalars; affine bases");
    }
}

// ---------------------------------------------------------------------------
// FFT
// ---------------------------------------------------------------------------

/// BN254 Fr radix-2 FFT in place, natural order in and out (arkworks's only order).
fn bench_fft(sizes: &[(u32, usize)], threads: usize, rng: &mut StdRng) {
    type Fr = ark_bn254::Fr;
    for &(log_n, runs) in sizes {
        let n = 1usize << log_n;
        let domain = Radix2EvaluationDomain::<Fr>::new(n).expect("BN254 Fr has 2-adicity 28");
        let mut v: Vec<Fr> = (0..n).map(|_| Fr::rand(rng)).collect();
        let t = time_runs(runs, || {
            domain.fft_in_place(&mut v);
            black_box(&mut v);
        });
        report("fr_fft_in_place", "bn254", n, threads, &t, "Radix2EvaluationDomain::fft_in_place, natural order");
    }
}

fn main() {
    let only = std::env::args().nth(1);
    if let Some(op) = &only {
        if !["mul", "msm", "fft"].contains(&op.as_str()) {
            eprintln!("ark-peer-bench: unknown op {op:?} (mul, msm or fft)");
            std::process::exit(2);
        }
    }
    let wanted = |op: &str| only.as_deref().is_none_or(|o| o == op);
    let threads = rayon::current_num_threads();
    let mut rng = StdRng::seed_from_u64(0x5eed);
    println!("# arkworks peer; rayon threads {threads} (RAYON_NUM_THREADS)");
    println!("system,op,curve,size,threads,runs,min_ms,median_ms,extra");
    if wanted("mul") {
        bench_mul::<ark_bn254::Fr>("fr", &mut rng);
        bench_mul::<ark_bn254::Fq>("fq", &mut rng);
    }
    if wanted("msm") {
        bench_msm::<ark_bn254::G1Projective>("bn254", &[(12, 20), (16, 10), (18, 5), (20, 5)], threads, &mut rng);
        // the one-thread row runs in its own one-thread pool, whatever RAYON_NUM_THREADS says
        let single = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
        single.install(|| bench_msm::<ark_bn254::G1Projective>("bn254", &[(16, 5)], 1, &mut rng));
        bench_msm::<ark_bls12_381::G1Projective>("bls12-381", &[(16, 10), (18, 5)], threads, &mut rng);
    }
    if wanted("fft") {
        bench_fft(&[(16, 20), (20, 5)], threads, &mut rng);
    }
}
