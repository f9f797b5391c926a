// gnark-crypto peer for zktensor's benchmarks (bench/peers.py builds and runs it).
//
// gnark-peer-bench [mul|msm|fft] times gnark-crypto on this machine and prints one
// CSV line per measurement, the format bench/peers.py parses:
//
//	system,op,curve,size,threads,runs,min_ms,median_ms,extra
//
// Threads come from GOMAXPROCS. Timing is the same as bench/common.py's time_runs:
// one warm-up call, then timed calls; a call during which other processes used more
// than 3% of the cores (at least 20 ms, /proc/stat's resolution) is not kept and
// another is made, up to four times the runs asked for. The median is the upper
// median of the kept calls.
package main

import (
	"fmt"
	"math/big"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	bls "github.com/consensys/gnark-crypto/ecc/bls12-381"
	blsfr "github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bn254"
	"github.com/consensys/gnark-crypto/ecc/bn254/fp"
	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
	"github.com/consensys/gnark-crypto/ecc/bn254/fr/fft"
)

const system = "gnark-crypto-v0.22.0"

// ---------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------

// machineBusySeconds: user + nice + system + irq + softirq + steal of the first
// /proc/stat line (USER_HZ = 100 ticks a second); idle and iowait are not work.
func machineBusySeconds() float64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	fields := strings.Fields(strings.SplitN(string(data), "\n", 2)[0])
	busy := 0.0
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // fields[0] is "cpu"
		if i < len(fields) {
			v, _ := strconv.ParseFloat(fields[i], 64)
			busy += v
		}
	}
	return busy / 100
}

func ownCPUSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

type timing struct {
	minMs, medianMs float64
	clean, tried    int
}

func timeRuns(runs int, call func()) timing {
	cores := float64(runtime.NumCPU())
	call()
	var kept, every []float64
	tried := 0
	for len(kept) < runs && tried < 4*runs {
		tried++
		busy0, own0 := machineBusySeconds(), ownCPUSeconds()
		start := time.Now()
		call()
		wall := time.Since(start).Seconds()
		busy1, own1 := machineBusySeconds(), ownCPUSeconds()
		others := (busy1 - busy0) - (own1 - own0)
		every = append(every, wall*1e3)
		if others <= max(0.03*wall*cores, 0.020) {
			kept = append(kept, wall*1e3)
		}
	}
	clean := len(kept)
	v := kept
	if clean == 0 {
		v = every
	}
	sort.Float64s(v)
	return timing{v[0], v[len(v)/2], clean, tried}
}

func report(op, curve string, size, threads int, t timing, note string) {
	fmt.Printf("%s,%s,%s,%d,%d,%d,%.3f,%.3f,%s; clean %d/%d runs\n",
		system, op, curve, size, threads, t.clean, t.minMs, t.medianMs, note, t.clean, t.tried)
}

// keep stops the compiler from dropping work whose result nothing reads.
var keep any

// ---------------------------------------------------------------------------
// Field multiplication (one thread)
// ---------------------------------------------------------------------------

const chainLen = 20_000_000
const arrayLen, arrayPasses = 4096, 5000

// benchMul: a dependent chain x = x*y (latency), a[i] = a[i]*b[i] over arrays that
// fit in L2 (throughput), and fr.Vector.Mul, gnark's vectorised form of the same
// (AVX-512 IFMA where the CPU has it): the throughput forms zktensor's elementwise
// kernels are compared with.
func benchMul() {
	var x, y fr.Element
	x.MustSetRandom()
	y.MustSetRandom()
	t := timeRuns(5, func() {
		z := x
		for i := 0; i < chainLen; i++ {
			z.Mul(&z, &y)
		}
		keep = z
	})
	report("fr_mul_chain", "bn254", chainLen, 1, t, fmt.Sprintf("%.2f ns/mul (median)", t.medianMs*1e6/chainLen))

	a, b, c := make(fr.Vector, arrayLen), make(fr.Vector, arrayLen), make(fr.Vector, arrayLen)
	for i := range a {
		a[i].MustSetRandom()
		b[i].MustSetRandom()
	}
	n := arrayLen * arrayPasses
	t = timeRuns(5, func() {
		for p := 0; p < arrayPasses; p++ {
			for i := range a {
				a[i].Mul(&a[i], &b[i])
			}
		}
		keep = a[0]
	})
	report("fr_mul_array", "bn254", n, 1, t,
		fmt.Sprintf("%.2f ns/mul (median); a[i] = a[i]*b[i] over %d elements", t.medianMs*1e6/float64(n), arrayLen))
	t = timeRuns(5, func() {
		for p := 0; p < arrayPasses; p++ {
			c.Mul(a, b)
		}
		keep = c[0]
	})
	report("fr_mul_vector", "bn254", n, 1, t,
		fmt.Sprintf("%.2f ns/mul (median); fr.Vector.Mul over %d elements", t.medianMs*1e6/float64(n), arrayLen))

	var u, w fp.Element
	u.MustSetRandom()
	w.MustSetRandom()
	t = timeRuns(5, func() {
		z := u
		for i := 0; i < chainLen; i++ {
			z.Mul(&z, &w)
		}
		keep = z
	})
	report("fq_mul_chain", "bn254", chainLen, 1, t, fmt.Sprintf("%.2f ns/mul (median)", t.medianMs*1e6/chainLen))
}

// ---------------------------------------------------------------------------
// G1 multi-scalar multiplication
// ---------------------------------------------------------------------------

type size struct{ log, runs int }

// msmConfig: gnark-crypto's default task count (twice the CPUs) with GOMAXPROCS as the
// CPU count, so that the thread count asked for is the one used.
func msmConfig(threads int) ecc.MultiExpConfig { return ecc.MultiExpConfig{NbTasks: 2 * threads} }

// chunk: points per goroutine when making bases. Each chunk starts at start +
// first*step (one scalar multiplication) and adds step once per point: distinct
// points for one addition each instead of one scalar multiplication each.
const chunk = 1024

func bn254Bases(n int) []bn254.G1Affine {
	g, _, _, _ := bn254.Generators()
	var a, b fr.Element
	a.MustSetRandom()
	b.MustSetRandom()
	var start, step bn254.G1Jac
	start.ScalarMultiplication(&g, a.BigInt(new(big.Int)))
	step.ScalarMultiplication(&g, b.BigInt(new(big.Int)))
	jac := make([]bn254.G1Jac, n)
	var wg sync.WaitGroup
	for first := 0; first < n; first += chunk {
		wg.Add(1)
		go func(first int) {
			defer wg.Done()
			var q bn254.G1Jac
			q.ScalarMultiplication(&step, big.NewInt(int64(first)))
			q.AddAssign(&start)
			for i := first; i < min(n, first+chunk); i++ {
				jac[i] = q
				q.AddAssign(&step)
			}
		}(first)
	}
	wg.Wait()
	return bn254.BatchJacobianToAffineG1(jac)
}

func blsBases(n int) []bls.G1Affine {
	g, _, _, _ := bls.Generators()
	var a, b blsfr.Element
	a.MustSetRandom()
	b.MustSetRandom()
	var start, step bls.G1Jac
	start.ScalarMultiplication(&g, a.BigInt(new(big.Int)))
	step.ScalarMultiplication(&g, b.BigInt(new(big.Int)))
	jac := make([]bls.G1Jac, n)
	var wg sync.WaitGroup
	for first := 0; first < n; first += chunk {
		wg.Add(1)
		go func(first int) {
			defer wg.Done()
			var q bls.G1Jac
			q.ScalarMultiplication(&step, big.NewInt(int64(first)))
			q.AddAssign(&start)
			for i := first; i < min(n, first+chunk); i++ {
				jac[i] = q
				q.AddAssign(&step)
			}
		}(first)
	}
	wg.Wait()
	return bls.BatchJacobianToAffineG1(jac)
}

const msmNote = "G1Jac.MultiExp; uniform random scalars; affine bases"

func benchMSM(threads int) {
	bases := bn254Bases(1 << 20)
	scalars := make(fr.Vector, len(bases))
	for i := range scalars {
		scalars[i].MustSetRandom()
	}
	run := func(n, runs, threads int) {
		cfg := msmConfig(threads)
		var out bn254.G1Jac
		t := timeRuns(runs, func() {
			if _, err := out.MultiExp(bases[:n], scalars[:n], cfg); err != nil {
				panic(err)
			}
		})
		report("g1_msm", "bn254", n, threads, t, fmt.Sprintf("%s; NbTasks=%d", msmNote, cfg.NbTasks))
	}
	for _, s := range []size{{12, 20}, {16, 10}, {18, 5}, {20, 5}} {
		run(1<<s.log, s.runs, threads)
	}
	previous := runtime.GOMAXPROCS(1) // the one-thread row: one OS thread runs Go code
	run(1<<16, 5, 1)
	runtime.GOMAXPROCS(previous)

	blsBasesAll := blsBases(1 << 18)
	blsScalars := make(blsfr.Vector, len(blsBasesAll))
	for i := range blsScalars {
		blsScalars[i].MustSetRandom()
	}
	cfg := msmConfig(threads)
	for _, s := range []size{{16, 10}, {18, 5}} {
		n := 1 << s.log
		var out bls.G1Jac
		t := timeRuns(s.runs, func() {
			if _, err := out.MultiExp(blsBasesAll[:n], blsScalars[:n], cfg); err != nil {
				panic(err)
			}
		})
		report("g1_msm", "bls12-381", n, threads, t, fmt.Sprintf("%s; NbTasks=%d", msmNote, cfg.NbTasks))
	}
}

// ---------------------------------------------------------------------------
// FFT
// ---------------------------------------------------------------------------

// benchFFT: gnark's decimation-in-frequency FFT leaves its output bit-reversed
// (fr_fft_dif); with fft.BitReverse after it the output is in natural order
// (fr_fft_dif_bitrev), the same job as arkworks's fft_in_place and zt.ntt.
func benchFFT(threads int) {
	for _, s := range []size{{16, 20}, {20, 5}} {
		n := 1 << s.log
		domain := fft.NewDomain(uint64(n))
		v := make(fr.Vector, n)
		for i := range v {
			v[i].MustSetRandom()
		}
		t := timeRuns(s.runs, func() { domain.FFT(v, fft.DIF, fft.WithNbTasks(threads)) })
		report("fr_fft_dif", "bn254", n, threads, t, "Domain.FFT(DIF): natural order in, bit-reversed out")
		t = timeRuns(s.runs, func() {
			domain.FFT(v, fft.DIF, fft.WithNbTasks(threads))
			fft.BitReverse(v)
		})
		report("fr_fft_dif_bitrev", "bn254", n, threads, t, "Domain.FFT(DIF) then BitReverse: natural order in and out")
	}
}

func main() {
	only := ""
	if len(os.Args) > 1 {
		only = os.Args[1]
		if only != "mul" && only != "msm" && only != "fft" {
			fmt.Fprintf(os.Stderr, "gnark-peer-bench: unknown op %q (mul, msm or fft)\n", only)
			os.Exit(2)
		}
	}
	threads := runtime.GOMAXPROCS(0)
	fmt.Printf("# gnark-crypto peer; GOMAXPROCS %d, %d CPUs, %s\n", threads, runtime.NumCPU(), runtime.Version())
	fmt.Println("system,op,curve,size,threads,runs,min_ms,median_ms,extra")
	if only == "" || only == "mul" {
		benchMul()
	}
	if only == "" || only == "msm" {
		benchMSM(threads)
	}
	if only == "" || only == "fft" {
		benchFFT(threads)
	}
}
