//! LoserTree vs heap, measured side by side in one run.
//!
//! - `order/*`: the merge order alone (engine only, no output assembly);
//! - `e2e/*`: the full deduplicating merge, output batches built;
//! - `dedup_16x1M`: 16 runs of 1M rows, int64 key and four payload columns.
//!
//! Key comparisons per row are printed once per configuration (criterion has no
//! column for them). Data is seeded, so every run measures the same input.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use criterion::{criterion_group, BatchSize, BenchmarkId, Criterion, Throughput};
use merge_core::{
    merge, merge_order_only, AggFunction, AggregateField, Algorithm, MergeFunction, MergeOptions, Run,
};

const TOTAL_ROWS: usize = 1 << 20;
const BATCH: usize = 8192;

/// SplitMix64: a tiny seeded generator, so the benches need no extra crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[derive(Clone, Copy)]
enum KeyKind {
    Int64,
    /// 16-byte strings (zero-padded numbers): a short tail after the shared head.
    Str16,
    /// 128-byte strings sharing a long prefix: every comparison scans most of the key.
    Str128,
    /// 128-byte strings of two zero-padded numbers (`k / 64`, then `k % 64` from byte 63
    /// on): keys 64 apart differ early, neighbours only in the last bytes, far past what
    /// a digest holds after the shared head (paths of a few levels look like this).
    Str128Late,
}

#[derive(Clone, Copy)]
enum Overlap {
    /// Run r holds keys r, r + K, r + 2K, ...: no key is in two runs.
    Disjoint,
    /// Each run draws its keys from the same range: most keys recur across runs.
    Heavy,
}

fn key_column(kind: KeyKind, keys: &[u64]) -> ArrayRef {
    match kind {
        KeyKind::Int64 => Arc::new(Int64Array::from_iter_values(keys.iter().map(|&k| k as i64))),
        KeyKind::Str16 => Arc::new(StringArray::from_iter_values(keys.iter().map(|k| format!("{k:0>16}")))),
        KeyKind::Str128 => Arc::new(StringArray::from_iter_values(keys.iter().map(|k| format!("{k:0>128}")))),
        KeyKind::Str128Late => Arc::new(StringArray::from_iter_values(
            keys.iter().map(|k| format!("{:0>62}/{:0>65}", k / 64, k % 64)),
        )),
    }
}

fn run_keys(k: usize, run: usize, per_run: usize, overlap: Overlap, rng: &mut Rng) -> Vec<u64> {
    match overlap {
        Overlap::Disjoint => (0..per_run).map(|i| (i * k + run) as u64).collect(),
        Overlap::Heavy => {
            let space = (per_run * 2) as u64;
            let mut keys: Vec<u64> = (0..per_run).map(|_| rng.next() % space).collect();
            keys.sort_unstable();
            keys.dedup();
            keys
        }
    }
}

/// `k` runs of about `TOTAL_ROWS / k` rows each (key plus `payload` int64 columns), in batches.
fn make_runs(
    k: usize,
    kind: KeyKind,
    overlap: Overlap,
    per_run: usize,
    payload: usize,
) -> (SchemaRef, Vec<Vec<RecordBatch>>) {
    let key_type = match kind {
        KeyKind::Int64 => DataType::Int64,
        KeyKind::Str16 | KeyKind::Str128 | KeyKind::Str128Late => DataType::Utf8,
    };
    let mut fields = vec![Field::new("k", key_type, false)];
    fields.extend((0..payload).map(|i| Field::new(format!("p{i}"), DataType::Int64, false)));
    let schema = Arc::new(Schema::new(fields));
    let mut rng = Rng(42);
    let runs = (0..k)
        .map(|run| {
            let keys = run_keys(k, run, per_run, overlap, &mut rng);
            keys.chunks(BATCH)
                .map(|chunk| {
                    let mut columns = vec![key_column(kind, chunk)];
                    columns.extend((0..payload).map(|_| {
                        Arc::new(Int64Array::from_iter_values(
                            chunk.iter().map(|_| (rng.next() % 1000) as i64),
                        )) as ArrayRef
                    }));
                    RecordBatch::try_new(schema.clone(), columns).unwrap()
                })
                .collect()
        })
        .collect();
    (schema, runs)
}

fn as_runs(schema: &SchemaRef, runs: &[Vec<RecordBatch>]) -> Vec<Run> {
    runs.iter().map(|batches| Run::from_batches(schema.clone(), batches.clone())).collect()
}

fn options(algorithm: Algorithm) -> MergeOptions {
    let mut o = MergeOptions::new(&["k"]);
    o.algorithm = algorithm;
    o
}

const ALGORITHMS: [(Algorithm, &str); 3] = [
    (Algorithm::LoserTree, "loser-tree"),
    (Algorithm::PaimonLoserTree, "paimon-loser-tree"),
    (Algorithm::Heap, "heap"),
];

fn bench_engines(c: &mut Criterion) {
    let kinds = [
        (KeyKind::Int64, "int64"),
        (KeyKind::Str16, "str16"),
        (KeyKind::Str128, "str128"),
        (KeyKind::Str128Late, "str128late"),
    ];
    for (kind, kind_name) in kinds {
        for (overlap, overlap_name) in [(Overlap::Disjoint, "disjoint"), (Overlap::Heavy, "overlap")] {
            let mut order = c.benchmark_group(format!("order/{kind_name}/{overlap_name}"));
            quick(&mut order);
            for k in [2usize, 8, 32, 128, 1024] {
                let (schema, runs) = make_runs(k, kind, overlap, TOTAL_ROWS / k, 0);
                let rows: usize = runs.iter().flatten().map(|b| b.num_rows()).sum();
                order.throughput(Throughput::Elements(rows as u64));
                for (algorithm, name) in ALGORITHMS {
                    let stats = merge_order_only(as_runs(&schema, &runs), options(algorithm)).unwrap();
                    println!(
                        "order/{kind_name}/{overlap_name}/{name}/K={k}: {:.2} key comparisons per input row",
                        stats.key_comparisons as f64 / stats.rows_in as f64
                    );
                    order.bench_with_input(BenchmarkId::new(name, k), &k, |b, _| {
                        b.iter_batched(
                            || as_runs(&schema, &runs),
                            |r| merge_order_only(r, options(algorithm)).unwrap(),
                            BatchSize::SmallInput,
                        )
                    });
                }
            }
            order.finish();
        }
    }
}

/// Ten samples over two seconds: enough for ratios measured side by side.
fn quick(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group.sample_size(10);
    group.warm_up_time(std::time::Duration::from_millis(500));
    group.measurement_time(std::time::Duration::from_secs(2));
}

fn consume(runs: Vec<Run>, options: MergeOptions) -> usize {
    merge(runs, options).unwrap().map(|b| b.unwrap().num_rows()).sum()
}

fn bench_end_to_end(c: &mut Criterion) {
    for (kind, kind_name) in [(KeyKind::Int64, "int64"), (KeyKind::Str128, "str128")] {
        let mut group = c.benchmark_group(format!("e2e/{kind_name}/overlap"));
        quick(&mut group);
        for k in [2usize, 32, 1024] {
            let (schema, runs) = make_runs(k, kind, Overlap::Heavy, TOTAL_ROWS / k, 2);
            let rows: usize = runs.iter().flatten().map(|b| b.num_rows()).sum();
            group.throughput(Throughput::Elements(rows as u64));
            for (algorithm, name) in ALGORITHMS {
                group.bench_with_input(BenchmarkId::new(name, k), &k, |b, _| {
                    b.iter_batched(
                        || as_runs(&schema, &runs),
                        |r| consume(r, options(algorithm)),
                        BatchSize::SmallInput,
                    )
                });
            }
        }
        group.finish();
    }
}

fn bench_dedup_16x1m(c: &mut Criterion) {
    let (schema, runs) = make_runs(16, KeyKind::Int64, Overlap::Heavy, 1 << 20, 4);
    let rows: usize = runs.iter().flatten().map(|b| b.num_rows()).sum();
    let mut group = c.benchmark_group("dedup_16x1M");
    quick(&mut group);
    group.throughput(Throughput::Elements(rows as u64));
    for (algorithm, name) in ALGORITHMS {
        group.bench_function(name, |b| {
            b.iter_batched(
                || as_runs(&schema, &runs),
                |r| consume(r, options(algorithm)),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

/// The merge functions of `fold_16x256k_6cols`: aggregating (sum on three columns,
/// last_non_null_value on three) against deduplicating the same 16 runs.
fn fold_functions() -> Vec<(&'static str, MergeFunction)> {
    let sum = AggregateField::new(AggFunction::Sum);
    let aggregate =
        MergeFunction::aggregate(["p0", "p1", "p2"].iter().map(|c| (c.to_string(), sum.clone())).collect());
    vec![
        ("deduplicate", MergeFunction::default()),
        ("first-row", MergeFunction::FirstRow { ignore_delete: false, drop_deletes: true }),
        ("partial-update", MergeFunction::partial_update()),
        ("aggregate", aggregate),
    ]
}

fn fold_runs() -> (SchemaRef, Vec<Vec<RecordBatch>>) {
    make_runs(16, KeyKind::Int64, Overlap::Heavy, 1 << 18, 6)
}

/// The cost of folding, each function on the same 16 runs.
fn bench_fold_functions(c: &mut Criterion) {
    let (schema, runs) = fold_runs();
    let rows: usize = runs.iter().flatten().map(|b| b.num_rows()).sum();
    let mut group = c.benchmark_group("fold_16x256k_6cols");
    quick(&mut group);
    group.throughput(Throughput::Elements(rows as u64));
    for (name, function) in fold_functions() {
        group.bench_function(name, |b| {
            b.iter_batched(
                || as_runs(&schema, &runs),
                |r| consume(r, MergeOptions { merge: function.clone(), ..options(Algorithm::LoserTree) }),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench_engines, bench_end_to_end, bench_dedup_16x1m, bench_fold_functions);
/// `MERGE_CORE_PROFILE=<fold function> cargo bench --bench merge` runs that fold of
/// `fold_16x256k_6cols` once and exits: a fixed amount of work for an instruction count
/// (`valgrind --tool=callgrind`), which a shared machine's timings cannot give.
fn main() {
    if let Ok(name) = std::env::var("MERGE_CORE_PROFILE") {
        let (schema, runs) = fold_runs();
        let (_, function) =
            fold_functions().into_iter().find(|(n, _)| *n == name).expect("a fold function's name");
        consume(as_runs(&schema, &runs), MergeOptions { merge: function, ..options(Algorithm::LoserTree) });
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
