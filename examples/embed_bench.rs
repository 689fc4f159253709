//! Timing of the embedding engine on a real model: load time, resident memory after load, and
//! the latency of embedding one short sentence, agent-written strategies of 25 to 75 tokens one
//! at a time, and a batch of 32, in the precision `META_UTL_EMBEDDING_PRECISION` chooses
//! (default: int8 where the CPU has AVX-512 VNNI).
//!
//! ```text
//! cargo build --release --example embed_bench
//! # cold page cache for the model files (evict them first), then warm:
//! python3 -c 'import os,sys
//! for p in sys.argv[1:]:
//!     fd=os.open(p,os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED); os.close(fd)' \
//!     $MODEL/model.safetensors $MODEL/tokenizer.json
//! target/release/examples/embed_bench $MODEL
//! target/release/examples/embed_bench $MODEL
//! RAYON_NUM_THREADS=1 target/release/examples/embed_bench $MODEL
//! META_UTL_EMBEDDING_PRECISION=f32 target/release/examples/embed_bench $MODEL
//! ```
//!
//! Arguments: `MODEL_DIR` (default: `$META_UTL_EMBEDDING_MODEL`), `CALLS` for the
//! single-sentence latency (default 200), `BATCHES` for the batch of 32 (default 30). Threads:
//! candle uses `RAYON_NUM_THREADS`, default all cores. Prints one line per measure.

// A measuring tool: its results are its output.
#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use meta_utl_mcp::embedding::{Embedder, MODEL_ENV};

/// Short coding strategies, 6 to 14 words, cycled through by the single-sentence measure.
const SENTENCES: &[&str] = &[
    "Parse the HTML with regular expressions",
    "Mock the database layer in the integration tests",
    "Increase the HTTP client timeout to 30 seconds",
    "Bump serde to 1.0.200 to fix the derive error",
    "Use the YAML library instead of regular expressions",
    "Deploy to k8s with a Helm chart and a readiness probe",
    "Cache the database connection per request instead of per query",
    "Revert the last commit and rebuild the Docker image without the cache",
];

/// Strategies as coding agents write them (identifiers, a reason clause), 25 to 75 tokens: the
/// proposals a blacklist check embeds.
const AGENT_SENTENCES: &[&str] = &[
    "Pin `numpy<2` in requirements.txt because the compiled extension breaks against the new ABI",
    "Raise `max.poll.interval.ms` to 600000 in the consumer config so the slow batch handler \
     stops getting kicked out of the group",
    "Switch the `build` job in `.github/workflows/ci.yml` to cache `~/.cargo` with actions/cache \
     keyed on Cargo.lock so CI goes green faster",
    "I'll wrap the `fetchUser` call in `src/api/client.ts` with a retry helper that backs off \
     exponentially up to five attempts, because the staging gateway drops roughly one request \
     in twenty with a 502 and the integration suite in `tests/e2e/profile.spec.ts` keeps \
     failing on it",
];

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .map(PathBuf::from)
        .or_else(|| std::env::var_os(MODEL_ENV).map(PathBuf::from))
        .unwrap_or_else(|| {
            eprintln!("usage: embed_bench MODEL_DIR [CALLS] [BATCHES] (or set {MODEL_ENV})");
            std::process::exit(2);
        });
    let calls: usize = args.next().map_or(200, |a| a.parse().expect("CALLS"));
    let batches: usize = args.next().map_or(30, |a| a.parse().expect("BATCHES"));
    let threads = std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "default".into());

    let rss_before = rss_kib();
    let start = Instant::now();
    let embedder = Embedder::load(&dir).unwrap_or_else(|e| {
        eprintln!("embed_bench: {e}");
        std::process::exit(2);
    });
    let load = start.elapsed();
    let rss_after = rss_kib();
    println!(
        "model {} dim {} precision {} threads {threads}",
        embedder.model_id(),
        embedder.dimension(),
        embedder.precision()
    );
    println!("load: {:.1} ms", ms(load));
    println!(
        "rss: {:.1} MiB before load, {:.1} MiB after (+{:.1}), peak {:.1} MiB",
        rss_before.0 as f64 / 1024.0,
        rss_after.0 as f64 / 1024.0,
        (rss_after.0 - rss_before.0) as f64 / 1024.0,
        rss_after.1 as f64 / 1024.0,
    );

    let first = Instant::now();
    black_box(embedder.embed(&[SENTENCES[0]]).expect("embed"));
    println!("first embed: {:.2} ms", ms(first.elapsed()));

    // Warm-up, then one sentence per call.
    for s in SENTENCES {
        black_box(embedder.embed(&[s]).expect("embed"));
    }
    let single: Vec<Duration> = (0..calls)
        .map(|i| {
            let s = SENTENCES[i % SENTENCES.len()];
            let t = Instant::now();
            black_box(embedder.embed(&[black_box(s)]).expect("embed"));
            t.elapsed()
        })
        .collect();
    report(&format!("one sentence ({calls} calls)"), single);

    for s in AGENT_SENTENCES {
        let tokens = embedder.token_count(s).expect("tokenize");
        let times: Vec<Duration> = (0..calls)
            .map(|_| {
                let t = Instant::now();
                black_box(embedder.embed(&[black_box(*s)]).expect("embed"));
                t.elapsed()
            })
            .collect();
        report(
            &format!("agent sentence of {tokens} tokens ({calls} calls)"),
            times,
        );
    }

    let batch: Vec<&str> = SENTENCES.iter().cycle().take(32).copied().collect();
    black_box(embedder.embed(&batch).expect("embed"));
    let batched: Vec<Duration> = (0..batches)
        .map(|_| {
            let t = Instant::now();
            black_box(embedder.embed(black_box(&batch)).expect("embed"));
            t.elapsed()
        })
        .collect();
    report(&format!("batch of 32 ({batches} calls)"), batched);
    println!("rss at end: {:.1} MiB", rss_kib().0 as f64 / 1024.0);
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn report(what: &str, mut times: Vec<Duration>) {
    if times.is_empty() {
        return;
    }
    times.sort_unstable();
    let at = |q: f64| times[((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1];
    println!(
        "{what}: p50 {:.2} ms, p95 {:.2} ms, min {:.2} ms, max {:.2} ms",
        ms(at(0.50)),
        ms(at(0.95)),
        ms(times[0]),
        ms(times[times.len() - 1]),
    );
}

/// (VmRSS, VmHWM) of this process in KiB, from /proc/self/status; zeros elsewhere.
fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}
