//! Cursors over the input runs: each pulls batches from its run, checks them against
//! the contract (schema, no null keys, sorted keys, one row per key when folding),
//! encodes their keys once, and exposes its current row to the merge engines.
//!
//! [`Runs`] owns all cursors of a merge together with the [`BatchStore`], so the
//! engines can compare, take and advance rows by run index and nothing else.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, Schema, SchemaRef};

use super::store::{BatchStore, RowRef, StoredBatch};
use super::value::ColumnView;
use super::version::{
    check_row_kind_type, compare_versions, first_null, BatchVersions, SequenceOrder, SequenceType,
    VersionColumns,
};
use crate::error::{blame, invalid, Result, RowLocation};
use crate::keys::ovc::{self, DONE, DUPLICATE};
use crate::keys::{KeyEncoder, KeyValues};

/// A run's batches, in key order.
pub type BatchIter = Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send>;

/// One sorted run: its schema and its batches.
pub struct Run {
    /// Schema of every batch of the run.
    pub schema: SchemaRef,
    /// The batches, in key order.
    pub batches: BatchIter,
}

impl Run {
    /// A run over batches already in memory.
    pub fn from_batches(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        Self { schema, batches: Box::new(batches.into_iter().map(Ok)) }
    }
}

/// Which columns of the merged schema play which role.
pub(crate) struct Layout {
    pub schema: SchemaRef,
    pub key: Vec<usize>,
    /// The columns ordering versions: the user sequence columns, then the system sequence.
    pub sequence: Vec<usize>,
    /// How each sequence column's values compare.
    sequence_types: Vec<SequenceType>,
    pub order: SequenceOrder,
    pub row_kind: Option<usize>,
    /// Keys inside a run must be strictly increasing (folding), not just non-decreasing.
    pub strict: bool,
    /// Columns the merge function reads value by value (see `StoredBatch::views`).
    pub view_columns: Vec<usize>,
}

impl Layout {
    pub(crate) fn new(
        schema: SchemaRef,
        key: &[String],
        versions: &VersionColumns,
        strict: bool,
    ) -> Result<Self> {
        let find = |role: &str, name: &str| {
            schema.index_of(name).map_err(|_| {
                let names: Vec<_> = schema.fields().iter().map(|f| f.name().as_str()).collect();
                invalid!("unknown {role} column '{name}' (the runs have columns: {})", names.join(", "))
            })
        };
        if key.is_empty() {
            return Err(invalid!("at least one key column is needed"));
        }
        let key = key.iter().map(|k| find("key", k)).collect::<Result<Vec<_>>>()?;
        let user = versions.sequence.iter();
        let system = versions.system_sequence.iter();
        let sequence = user.chain(system).map(|s| find("sequence", s)).collect::<Result<Vec<_>>>()?;
        let row_kind = versions.row_kind.as_deref().map(|r| find("row-kind", r)).transpose()?;
        for (i, &idx) in sequence.iter().enumerate() {
            if sequence[..i].contains(&idx) {
                return Err(invalid!(
                    "column '{}' is named twice as a sequence column",
                    schema.field(idx).name()
                ));
            }
        }
        for (role, idx) in sequence.iter().map(|i| ("sequence", *i)).chain(row_kind.map(|i| ("row-kind", i)))
        {
            if key.contains(&idx) {
                return Err(invalid!(
                    "column '{}' cannot be both a key and a {role} column",
                    schema.field(idx).name()
                ));
            }
        }
        if let Some(idx) = row_kind {
            check_row_kind_type(schema.field(idx).name(), schema.field(idx).data_type())?;
        }
        let type_of = |s: usize| SequenceType::of(schema.field(s).name(), schema.field(s).data_type());
        let sequence_types = sequence.iter().map(|&s| type_of(s)).collect::<Result<_>>()?;
        let order = SequenceOrder { user_fields: versions.sequence.len(), descending: versions.descending };
        Ok(Self { schema, key, sequence, sequence_types, order, row_kind, strict, view_columns: Vec::new() })
    }

    /// The merge has sequence columns, which order the versions of a key (without them,
    /// the runs' order does).
    #[inline]
    pub(crate) fn has_sequence(&self) -> bool {
        !self.sequence.is_empty()
    }

    pub(crate) fn key_names(&self) -> String {
        let names: Vec<_> = self.key.iter().map(|&i| format!("'{}'", self.schema.field(i).name())).collect();
        names.join(", ")
    }

    pub(crate) fn name(&self, idx: usize) -> &str {
        self.schema.field(idx).name()
    }

    /// The sequence values and row kinds of `batch`, whose first row is row `first_row`
    /// of run `run` (for error messages).
    pub(crate) fn versions_of(
        &self,
        batch: &RecordBatch,
        run: usize,
        first_row: u64,
    ) -> Result<BatchVersions> {
        let sequence: Vec<_> = self.sequence.iter().map(|&s| (self.name(s), batch.column(s))).collect();
        let row_kind = self.row_kind.map(|r| (self.name(r), batch.column(r)));
        BatchVersions::read(&sequence, &self.sequence_types, self.order, row_kind, run, first_row)
    }
}

/// The batch a cursor stands in.
struct Loaded<V> {
    id: u32,
    keys: V,
    pos: usize,
    /// `same_as_prev[i]`: row `i` has the key of the row before it (possibly the last row of
    /// the previous batch). Only kept when some row does, which only `merge="none"` allows.
    same_as_prev: Option<Vec<bool>>,
    /// `codes[i]`: row `i`'s offset-value code against the row before it in the run (the
    /// empty key for the run's first row), when the engine asked for them
    /// ([`Runs::keep_codes`]).
    codes: Vec<u64>,
}

struct RunCursor<V> {
    input: BatchIter,
    current: Option<Loaded<V>>,
    /// The next batch, read early only to see whether it continues the current key.
    lookahead: Option<Loaded<V>>,
    /// The keys of the batch before `current`, whose last row may be the row taken last
    /// (see [`Runs::same_key_as_taken`]); dropped when the run's next row is taken.
    previous_keys: Option<V>,
    /// Run position of the next batch's first row.
    next_row: u64,
    /// Non-empty batches read so far.
    batches: u64,
}

/// Counters every engine updates, reported as `stream.stats`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counters {
    pub key_comparisons: u64,
    pub rows_in: u64,
}

/// The rows of one key, in version order.
#[derive(Default)]
pub(crate) struct Group {
    pub rows: Vec<RowRef>,
    /// Rows came from duplicate keys inside one run (`merge="none"` only).
    absorbed: bool,
}

impl Group {
    pub(crate) fn clear(&mut self) {
        self.rows.clear();
        self.absorbed = false;
    }
}

/// A run's current key as the engines see it first.
#[derive(Clone, Copy)]
struct Head {
    /// [`KeyValues::digest`] of the current row.
    digest: u64,
    /// The current row's offset-value code against the run's previous row, if codes are kept.
    code: u64,
    live: bool,
}

impl Head {
    const DONE: Self = Self { digest: u64::MAX, code: DONE, live: false };
}

/// All cursors of one merge.
pub(crate) struct Runs<E: KeyEncoder> {
    cursors: Vec<RunCursor<E::Values>>,
    /// Each run's head, kept apart from its cursor so that most comparisons read two
    /// integers of one small array instead of two cursors and their key buffers.
    heads: Vec<Head>,
    encoder: E,
    layout: Arc<Layout>,
    /// Batches get offset-value codes (see [`Self::keep_codes`]).
    coded: bool,
    pub store: BatchStore,
    pub counters: Counters,
}

impl<E: KeyEncoder> Runs<E> {
    pub(crate) fn new(inputs: Vec<BatchIter>, encoder: E, layout: Arc<Layout>) -> Self {
        let cursors: Vec<_> = inputs
            .into_iter()
            .map(|input| RunCursor {
                input,
                current: None,
                lookahead: None,
                previous_keys: None,
                next_row: 0,
                batches: 0,
            })
            .collect();
        let heads = vec![Head::DONE; cursors.len()];
        let (store, counters) = (BatchStore::default(), Counters::default());
        Self { cursors, heads, encoder, layout, coded: false, store, counters }
    }

    /// Whether [`Self::keep_codes`] gives the keys offset-value codes: they are byte
    /// strings ([`KeyValues::BYTE_ORDERED`]).
    pub(crate) const CODED: bool = E::Values::BYTE_ORDERED;

    /// Has each row's offset-value code against the row before it in its run computed as
    /// its batch is checked (in place of the order check's comparison), for an engine that
    /// plays its matches on codes ([`Self::play`]). Only for [`Self::CODED`] keys, before
    /// any run starts.
    pub(crate) fn keep_codes(&mut self) {
        debug_assert!(Self::CODED && self.store.len() == 0);
        self.coded = true;
    }

    /// Whether matches are played on codes: [`Self::keep_codes`] was called and
    /// [`Self::drop_codes_if_digests_settle`] kept them.
    #[inline(always)]
    fn plays_codes(&self) -> bool {
        Self::CODED && self.coded
    }

    /// Goes back to digests if every started run's first batch has digests that settle
    /// every match ([`KeyValues::digests_settle`]: short tails past the shared head). A
    /// code tie reads both keys' bytes, far from the cache in a merge of long keys, where
    /// such digests never do: on 128-byte keys with 6-byte tails the tree was 1.5x slower
    /// on codes. Called after every run started and before any match is played.
    pub(crate) fn drop_codes_if_digests_settle(&mut self) {
        let settle = self.cursors.iter().filter_map(|c| c.current.as_ref()).all(|l| l.keys.digests_settle());
        if settle {
            self.coded = false;
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.cursors.len()
    }

    /// Loads run `i`'s first row.
    pub(crate) fn start(&mut self, i: usize) -> Result<()> {
        self.cursors[i].current = self.load_next(i)?;
        self.update_head(i);
        Ok(())
    }

    fn update_head(&mut self, i: usize) {
        self.heads[i] = match &self.cursors[i].current {
            Some(loaded) => Head {
                digest: loaded.keys.digest(loaded.pos),
                code: loaded.codes.get(loaded.pos).copied().unwrap_or(DONE),
                live: true,
            },
            None => Head::DONE,
        };
    }

    /// The digest of live run `i`'s current key.
    #[inline]
    pub(crate) fn digest(&self, i: usize) -> u64 {
        self.heads[i].digest
    }

    /// Run `i` has no rows left.
    #[inline]
    pub(crate) fn is_done(&self, i: usize) -> bool {
        !self.heads[i].live
    }

    /// Compares the current keys of two live runs; the comparison is counted.
    #[inline(always)]
    pub(crate) fn compare_keys(&mut self, a: usize, b: usize) -> Ordering {
        self.counters.key_comparisons += 1;
        let (x, y) = (self.heads[a].digest, self.heads[b].digest);
        if x != y {
            return x.cmp(&y);
        }
        if E::Values::tie_is_equal(x) {
            return Ordering::Equal;
        }
        let (a, b) = (self.loaded(a), self.loaded(b));
        a.keys.compare(a.pos, &b.keys, b.pos)
    }

    /// Like [`Self::compare_keys`], but a used-up run sorts after every live one (and two
    /// used-up runs compare as `Less`: they need no order). Only real comparisons count.
    #[inline]
    pub(crate) fn compare_live(&mut self, a: usize, b: usize) -> Ordering {
        match (self.heads[a].live, self.heads[b].live) {
            (true, true) => self.compare_keys(a, b),
            (_, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
        }
    }

    /// Whether run `a` goes before run `b` in the merge's order (key, then version; a
    /// used-up run after every live one), given their current digests `x` and `y` as
    /// [`Self::digest`] gives them, which a caller may keep beside its own structure:
    /// most calls are settled by the two digests. Only real comparisons count.
    #[inline(always)]
    pub(crate) fn goes_before(&mut self, a: usize, x: u64, b: usize, y: u64) -> bool {
        if x != y {
            // A used-up run's digest is the greatest: unequal digests with neither that
            // one are two live keys, compared.
            self.counters.key_comparisons += (x.max(y) != Head::DONE.digest) as u64;
            return x < y;
        }
        if x != Head::DONE.digest && E::Values::tie_is_equal(x) {
            // The same key in two live runs (the usual tie): the versions decide.
            self.counters.key_comparisons += 1;
            return self.compare_versions(a, b) == Ordering::Less;
        }
        match self.compare_live(a, b) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => self.compare_versions(a, b) == Ordering::Less,
        }
    }

    /// What a loser tree keeps beside run `i` in its nodes to play matches on: the current
    /// row's offset-value code with [`Self::keep_codes`], else its digest.
    #[inline(always)]
    pub(crate) fn match_key(&self, i: usize) -> u64 {
        if self.plays_codes() {
            self.heads[i].code
        } else {
            self.heads[i].digest
        }
    }

    /// Plays a match of a loser tree between runs `a` and `b`, given their
    /// [`Self::match_key`]s `x` and `y` as the tree keeps them: whether `a` goes before `b`
    /// (see [`Self::goes_before`]), and the key to keep beside the loser. Codes must be
    /// against the same row, the one the tree's winner took last (the empty key while
    /// the tree is built); the loser's code is then against the winner. Only real
    /// comparisons count.
    #[inline(always)]
    pub(crate) fn play(&mut self, a: usize, x: u64, b: usize, y: u64) -> (bool, u64) {
        if !self.plays_codes() {
            let a_first = self.goes_before(a, x, b, y);
            return (a_first, if a_first { y } else { x });
        }
        if x != y {
            // Unequal codes against one base order the keys, and the greater code is also
            // the loser's against the winner. A used-up run's code is the greatest.
            self.counters.key_comparisons += (x.max(y) != DONE) as u64;
            return if x < y { (true, y) } else { (false, x) };
        }
        match x {
            DONE => (true, DONE),
            DUPLICATE => {
                self.counters.key_comparisons += 1;
                (self.compare_versions(a, b) == Ordering::Less, DUPLICATE)
            }
            _ => {
                self.counters.key_comparisons += 1;
                match ovc::settle_tie(self.ordered_bytes(a), self.ordered_bytes(b), x) {
                    (Ordering::Less, code) => (true, code),
                    (Ordering::Greater, code) => (false, code),
                    (Ordering::Equal, _) => (self.compare_versions(a, b) == Ordering::Less, DUPLICATE),
                }
            }
        }
    }

    /// Live run `i`'s current key as ordered bytes ([`Self::CODED`] keys only).
    #[inline(always)]
    fn ordered_bytes(&self, i: usize) -> &[u8] {
        let loaded = self.loaded(i);
        loaded.keys.ordered_bytes(loaded.pos).expect("coded keys are byte strings")
    }

    /// Whether the winner of a loser tree, live run `a` whose match key (see
    /// [`Self::match_key`]) the tree kept as `key`, continues the group of the row run
    /// `b` took last: the code says so with codes, else see [`Self::same_key_as_taken`],
    /// `taken_digest` being that row's digest.
    #[inline]
    pub(crate) fn continues_group(&mut self, a: usize, key: u64, b: usize, taken_digest: u64) -> bool {
        if self.plays_codes() {
            return key == DUPLICATE;
        }
        self.same_key_as_taken(a, b, taken_digest)
    }

    /// Compares the versions of the current rows of two live runs (same key).
    #[inline(always)]
    pub(crate) fn compare_versions(&self, a: usize, b: usize) -> Ordering {
        if !self.layout.has_sequence() {
            // Two cursors are two runs, and without a sequence the later run is newer.
            return a.cmp(&b);
        }
        let (a, b) = (self.current(a), self.current(b));
        compare_versions(self.store.version(a), self.store.version(b))
    }

    #[inline]
    fn loaded(&self, i: usize) -> &Loaded<E::Values> {
        self.cursors[i].current.as_ref().expect("engines only look at live runs")
    }

    /// The current row of live run `i`.
    #[inline]
    pub(crate) fn current(&self, i: usize) -> RowRef {
        let loaded = self.loaded(i);
        RowRef { batch: loaded.id, row: loaded.pos as u32 }
    }

    /// Moves run `i` to its next row, reading the next batch when this one is used up.
    pub(crate) fn advance(&mut self, i: usize) -> Result<()> {
        let loaded = self.cursors[i].current.as_mut().expect("advance of a live run");
        loaded.pos += 1;
        if loaded.pos < loaded.keys.len() {
            loaded.keys.prefetch_ahead(loaded.pos);
            if self.layout.has_sequence() {
                self.store.get(loaded.id).versions.prefetch_ahead(loaded.pos);
            }
            self.heads[i].digest = loaded.keys.digest(loaded.pos);
            if self.coded {
                self.heads[i].code = loaded.codes[loaded.pos];
            }
            return Ok(());
        }
        self.next_batch(i)
    }

    /// Moves run `i` from its used-up batch to the next one.
    #[inline(never)]
    fn next_batch(&mut self, i: usize) -> Result<()> {
        let next = match self.cursors[i].lookahead.take() {
            Some(next) => Some(next),
            None => self.load_next(i)?,
        };
        let cursor = &mut self.cursors[i];
        cursor.previous_keys = std::mem::replace(&mut cursor.current, next).map(|done| done.keys);
        self.update_head(i);
        Ok(())
    }

    /// Whether live run `a`'s current key equals the key of the row run `b` took last
    /// (the row before its current one), which must have been taken and `b` advanced
    /// past it. Digests are compared first; a tie of full keys counts as a comparison.
    #[inline]
    pub(crate) fn same_key_as_taken(&mut self, a: usize, b: usize, taken_digest: u64) -> bool {
        if self.heads[a].digest != taken_digest {
            return false;
        }
        if E::Values::tie_is_equal(taken_digest) {
            return true;
        }
        self.counters.key_comparisons += 1;
        let cursor = &self.cursors[b];
        let (keys, row) = match &cursor.current {
            Some(loaded) if loaded.pos > 0 => (&loaded.keys, loaded.pos - 1),
            _ => {
                let keys = cursor.previous_keys.as_ref().expect("a run advanced past a taken row");
                (keys, keys.len() - 1)
            }
        };
        let a = self.loaded(a);
        a.keys.compare(a.pos, keys, row) == Ordering::Equal
    }

    /// Appends run `i`'s current row to `group`, and with it the following rows of the
    /// same run that share its key (possible only for `merge="none"`). The cursor stays on
    /// the last row taken: advancing it later moves to a new key.
    pub(crate) fn take(&mut self, i: usize, group: &mut Group) -> Result<()> {
        // The run's rows taken before are done with: their keys need not stay readable.
        self.cursors[i].previous_keys = None;
        group.rows.push(self.current(i));
        if !self.layout.strict {
            while self.next_has_same_key(i)? {
                self.advance(i)?;
                group.rows.push(self.current(i));
                group.absorbed = true;
            }
        }
        Ok(())
    }

    fn next_has_same_key(&mut self, i: usize) -> Result<bool> {
        let loaded = self.loaded(i);
        let next = loaded.pos + 1;
        if next < loaded.keys.len() {
            return Ok(loaded.same_as_prev.as_ref().is_some_and(|s| s[next]));
        }
        if self.cursors[i].lookahead.is_none() {
            self.cursors[i].lookahead = self.load_next(i)?;
        }
        Ok(self.cursors[i].lookahead.as_ref().is_some_and(|l| l.same_as_prev.as_ref().is_some_and(|s| s[0])))
    }

    /// Puts a group gathered from several cursors into version order. The engines emit
    /// rows in version order already, except rows absorbed from duplicate keys of one
    /// run, whose sequence values may go backwards.
    pub(crate) fn finish_group(&self, group: &mut Group) {
        if group.absorbed && self.layout.has_sequence() {
            group.rows.sort_by(|a, b| compare_versions(self.store.version(*a), self.store.version(*b)));
        }
    }

    /// Drops the stored batches that no cursor stands in, the null row aside, nor
    /// `also_live` marks (by batch id).
    pub(crate) fn release_unused(&mut self, also_live: impl FnOnce(&mut [bool])) {
        let mut live = vec![false; self.store.len()];
        for cursor in &self.cursors {
            for loaded in cursor.current.iter().chain(&cursor.lookahead) {
                live[loaded.id as usize] = true;
            }
        }
        self.store.mark_live(&mut live);
        also_live(&mut live);
        self.store.release(&live);
    }

    /// Reads run `i`'s next non-empty batch, checks it and stores it. A batch decoded from
    /// a file that breaks the contract names the file (see [`blame`]).
    fn load_next(&mut self, i: usize) -> Result<Option<Loaded<E::Values>>> {
        let batch = loop {
            match self.cursors[i].input.next() {
                None => return Ok(None),
                Some(Err(e)) => return Err(e.into()),
                Some(Ok(b)) if b.num_rows() == 0 => continue,
                Some(Ok(b)) => break b,
            }
        };
        let schema = batch.schema();
        self.check_and_store(i, batch).map(Some).map_err(|e| blame(&schema, e))
    }

    fn check_and_store(&mut self, i: usize, batch: RecordBatch) -> Result<Loaded<E::Values>> {
        let first_row = self.cursors[i].next_row;
        let at = |row: usize| RowLocation { run: i, row: first_row + row as u64 };
        let number = self.cursors[i].batches;
        self.cursors[i].batches += 1;
        check_batch_schema(&self.layout.schema, i, number, &batch)?;
        let layout = &self.layout;
        let key_columns: Vec<ArrayRef> = layout.key.iter().map(|&k| batch.column(k).clone()).collect();
        for (&k, column) in layout.key.iter().zip(&key_columns) {
            if let Some(row) = first_null(column.as_ref()) {
                return Err(invalid!("{}: null in key column '{}'", at(row), layout.name(k)));
            }
        }
        let keys = self.encoder.encode(&key_columns)?;
        let previous = self.cursors[i].current.as_ref().map(|c| (&c.keys, c.keys.len() - 1));
        let mut codes = Vec::new();
        let order = Order { strict: layout.strict, key_names: &layout.key_names(), at: &at };
        let same_as_prev = match self.coded {
            true => check_order_coding(&keys, previous, &order, &mut codes)?,
            false => check_order(&keys, previous, &order)?,
        };
        let versions = layout.versions_of(&batch, i, first_row)?;
        let rows = batch.num_rows();
        self.cursors[i].next_row += rows as u64;
        self.counters.rows_in += rows as u64;
        let views = layout.view_columns.iter().map(|&c| ColumnView::new(batch.column(c))).collect();
        let id = self.store.push(StoredBatch { batch, versions, run: i, first_row, views });
        Ok(Loaded { id, keys, pos: 0, same_as_prev, codes })
    }
}

/// Every batch must have the runs' column types (`schema`; the engines read buffers by
/// type), and no nulls where the schema says there are none. `run` and `number` name
/// the batch in messages.
pub(crate) fn check_batch_schema(
    schema: &Schema,
    run: usize,
    number: u64,
    batch: &RecordBatch,
) -> Result<()> {
    let expected = schema.fields();
    let got = batch.schema();
    let same = got.fields().len() == expected.len()
        && expected.iter().zip(got.fields()).all(|(e, g)| e.data_type() == g.data_type());
    if !same {
        return Err(invalid!(
            "run {run}, batch {number}: the batch's schema ({got}) differs from the runs' schema ({schema})"
        ));
    }
    let null_in_required =
        expected.iter().zip(batch.columns()).find(|(f, c)| !f.is_nullable() && c.null_count() > 0);
    match null_in_required {
        Some((field, _)) => Err(invalid!(
            "run {run}, batch {number}: null in column '{}', which the runs' schema declares not nullable",
            field.name()
        )),
        None => Ok(()),
    }
}

/// The rule a batch's keys must follow, and where a broken one is reported.
struct Order<'a> {
    /// Keys must be strictly increasing, not just non-decreasing.
    strict: bool,
    key_names: &'a str,
    at: &'a dyn Fn(usize) -> RowLocation,
}

impl Order<'_> {
    /// Checks `order`, how the key before `row` (of a batch of `rows` rows) compares with
    /// `row`'s, and marks `row` in `same_as_prev` if the two are equal.
    fn check(
        &self,
        row: usize,
        order: Ordering,
        rows: usize,
        same_as_prev: &mut Option<Vec<bool>>,
    ) -> Result<()> {
        let (key_names, at) = (self.key_names, self.at);
        match order {
            Ordering::Less => {}
            Ordering::Greater => {
                return Err(invalid!(
                "{}: run is not sorted by key {key_names}: this row's key is smaller than the previous row's",
                at(row)
            ))
            }
            Ordering::Equal if self.strict => {
                return Err(invalid!(
                    "{}: duplicate key {key_names} inside one run (equal to the previous row's); \
                     a run must hold each key once when folding versions (merge='none' keeps duplicates)",
                    at(row)
                ))
            }
            Ordering::Equal => same_as_prev.get_or_insert_with(|| vec![false; rows])[row] = true,
        }
        Ok(())
    }
}

/// Checks that `keys` continue `previous` (the last key of the run's previous batch) in
/// ascending order as `order` says. Returns which rows repeat the key before them, or
/// `None` when none does.
fn check_order<V: KeyValues>(
    keys: &V,
    previous: Option<(&V, usize)>,
    order: &Order,
) -> Result<Option<Vec<bool>>> {
    let mut same_as_prev: Option<Vec<bool>> = None;
    let orders = previous
        .map(|(prev, last)| prev.compare(last, keys, 0))
        .into_iter()
        .map(|o| (0, o))
        .chain((1..keys.len()).map(|row| (row, keys.compare(row - 1, keys, row))));
    for (row, o) in orders {
        order.check(row, o, keys.len(), &mut same_as_prev)?;
    }
    Ok(same_as_prev)
}

/// [`check_order`] for byte-ordered keys, which also pushes onto `codes` each row's
/// offset-value code against the row before it (the run's first against the empty key):
/// finding where two keys differ is their comparison.
fn check_order_coding<V: KeyValues>(
    keys: &V,
    previous: Option<(&V, usize)>,
    order: &Order,
    codes: &mut Vec<u64>,
) -> Result<Option<Vec<bool>>> {
    fn bytes<V: KeyValues>(values: &V, row: usize) -> &[u8] {
        values.ordered_bytes(row).expect("coded keys are byte strings")
    }
    let mut same_as_prev: Option<Vec<bool>> = None;
    codes.reserve_exact(keys.len());
    for row in 0..keys.len() {
        let next = bytes(keys, row);
        let before = if row > 0 { Some((keys, row - 1)) } else { previous };
        let Some((prev, at)) = before else {
            codes.push(ovc::code_after(&[], next, 0).1);
            continue;
        };
        let (o, code) = ovc::code_after(bytes(prev, at), next, prev.known_shared(at, keys, row));
        order.check(row, o, keys.len(), &mut same_as_prev)?;
        codes.push(code);
    }
    Ok(same_as_prev)
}
