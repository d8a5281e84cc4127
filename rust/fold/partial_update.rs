//! The `partial-update` merge function (Paimon's `PartialUpdateMergeFunction`).
//!
//! Without sequence groups, each value column takes its newest non-null value; with
//! them, a group's ordering columns decide whether a version is newer than the row so
//! far for the columns the group protects (a protected column then takes the version's
//! value, null or not, or folds it with its aggregate function; an older version is
//! still folded into aggregated columns, with `agg_reversed`). A version whose ordering
//! columns are all null leaves its group alone.
//!
//! Retracts: an error without sequence groups, unless `remove_record_on_delete` (a `-D`
//! replaces the row by its own values, `-U` is skipped); with groups, a retract newer for
//! a group clears its plain columns, retracts its aggregated ones and moves its ordering
//! columns on (an older one still retracts aggregated columns). The first version of a
//! key, if a retract, also gives the row its starting values, as in Paimon.
//!
//! Fast path, with no sequence group and only adds: the builder picks each column's
//! newest non-null value (a `Newest` sink, fed the key's versions once).

use std::cmp::Ordering;

use arrow_schema::DataType;

use super::accumulator::{accumulator, java_compare, Acc, AccError, Accumulator, State};
use super::{acc_error, cannot_retract, cx, sink_of, AggFunction, Columns, MergeFunction, Paths};
use crate::error::{invalid, Result};
use crate::fold::builder::{NewestRule, OutputBuilder, Sink};
use crate::runs::store::{BatchStore, RowRef};
use crate::runs::version::RowKind;

struct Column {
    index: usize,
    slot: usize,
    name: String,
    data_type: DataType,
    /// The sequence group this column belongs to, as an ordering or a protected column.
    group: Option<usize>,
    /// The column's aggregate function, with its name (never for ordering columns).
    aggregate: Option<(AggFunction, Box<dyn Accumulator>)>,
}

struct Group {
    /// The ordering columns, as positions in `PartialUpdater::columns`.
    ordering: Vec<usize>,
    /// A `-D` newer for this group deletes the whole row.
    removes_row: bool,
}

/// How a version relates to the row so far, for one sequence group.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Turn {
    /// Its ordering columns are all null: the group is left alone.
    Skip,
    /// Newer than or as new as the row so far.
    Newer,
    Older,
}

pub(crate) struct PartialUpdater {
    /// The key columns, for messages.
    key: Vec<usize>,
    /// Rows have kinds (without, every row is an add and no kind need be looked at).
    has_row_kinds: bool,
    columns: Vec<Column>,
    groups: Vec<Group>,
    remove_record_on_delete: bool,
    system_sequence: Option<usize>,
    /// The fast path applies (no group, no aggregate but last_non_null_value).
    newest_sinks: bool,
}

impl PartialUpdater {
    pub(crate) fn new(function: &MergeFunction, columns: &Columns) -> Result<Self> {
        let MergeFunction::PartialUpdate {
            ignore_delete,
            remove_record_on_delete,
            sequence_groups,
            fields,
            default,
            remove_record_on_sequence_group,
            ..
        } = function
        else {
            unreachable!("built for partial-update")
        };
        let conflict = |option: &str, paimon: &str| {
            invalid!("ignore_delete and {option} conflict (Paimon refuses 'ignore-delete' with '{paimon}')")
        };
        if *ignore_delete && *remove_record_on_delete {
            return Err(conflict("remove_record_on_delete", "partial-update.remove-record-on-delete"));
        }
        if *ignore_delete && !remove_record_on_sequence_group.is_empty() {
            return Err(conflict(
                "remove_record_on_sequence_group",
                "partial-update.remove-record-on-sequence-group",
            ));
        }
        if *remove_record_on_delete && !sequence_groups.is_empty() {
            return Err(invalid!(
                "sequence_groups and remove_record_on_delete conflict (a retract is handled by its groups; use \
                 remove_record_on_sequence_group)"
            ));
        }
        let value_columns: Vec<usize> =
            columns.values.iter().copied().filter(|&c| Some(c) != columns.system_sequence()).collect();
        let position = |index: usize| value_columns.iter().position(|&c| c == index).expect("a value column");
        let mut group_of: Vec<Option<usize>> = vec![None; value_columns.len()];
        let mut is_ordering = vec![false; value_columns.len()];
        let mut groups = Vec::new();
        for (g, group) in sequence_groups.iter().enumerate() {
            let what = "a sequence group";
            if group.ordering.is_empty() || group.fields.is_empty() {
                return Err(invalid!("a sequence group needs ordering columns and columns to protect"));
            }
            let mut ordering = Vec::new();
            for (name, ordering_column) in
                group.ordering.iter().map(|n| (n, true)).chain(group.fields.iter().map(|n| (n, false)))
            {
                let at = position(columns.value_column(name, what)?);
                if group_of[at].is_some() {
                    return Err(invalid!("column '{name}' is in two sequence groups"));
                }
                group_of[at] = Some(g);
                is_ordering[at] = ordering_column;
                if ordering_column {
                    ordering.push(at);
                }
            }
            let removes_row = group.ordering.iter().any(|o| remove_record_on_sequence_group.contains(o));
            groups.push(Group { ordering, removes_row });
        }
        for name in remove_record_on_sequence_group {
            if !sequence_groups.iter().any(|g| g.ordering.contains(name)) {
                return Err(invalid!(
                    "remove_record_on_sequence_group names '{name}', which orders no sequence group"
                ));
            }
        }
        for (name, _) in fields {
            columns.value_column(name, "partial-update fields")?;
        }
        let mut out = Vec::new();
        for (at, &index) in value_columns.iter().enumerate() {
            let f = columns.field(index);
            let named = fields.iter().find(|(n, _)| n == f.name()).map(|(_, field)| field);
            let field = named.or(default.as_ref()).filter(|_| !is_ordering[at]);
            let aggregate = match field {
                None => None,
                Some(field) if group_of[at].is_none() && field.function != AggFunction::LastNonNullValue => {
                    return Err(invalid!(
                        "partial-update column '{}' has aggregate function '{}' but is in no sequence group: \
                         only last_non_null_value applies outside sequence groups (as Paimon's)",
                        f.name(),
                        field.function.name()
                    ))
                }
                Some(field) => Some((field.function, accumulator(field, f)?)),
            };
            out.push(Column {
                index,
                slot: columns.slot(index),
                name: f.name().clone(),
                data_type: f.data_type().clone(),
                group: group_of[at],
                aggregate,
            });
        }
        Ok(Self {
            key: columns.layout.key.clone(),
            has_row_kinds: columns.layout.row_kind.is_some(),
            newest_sinks: groups.is_empty() && columns.paths == Paths::Fast,
            columns: out,
            groups,
            remove_record_on_delete: *remove_record_on_delete,
            system_sequence: columns.system_sequence(),
        })
    }

    pub(crate) fn sink(&self, column: usize) -> Sink {
        let Some(c) = self.columns.iter().find(|c| c.index == column) else {
            return Sink::Gather(Vec::new()); // the system sequence
        };
        if self.newest_sinks {
            return Sink::newest(NewestRule { slot: c.slot, skip_nulls: true, skip_retracts: true });
        }
        match &c.aggregate {
            Some((_, accumulator)) if c.group.is_some() => sink_of(accumulator.output(), &c.data_type),
            _ => Sink::Gather(Vec::new()),
        }
    }

    /// A key's only version: every value as it is (a `retract`, kept by a compaction,
    /// also where a newest pick would pass it over).
    pub(crate) fn pass_through(
        &self,
        row: RowRef,
        retract: bool,
        store: &BatchStore,
        out: &mut OutputBuilder,
    ) -> Result<()> {
        out.candidates(&[row]);
        if retract || !self.newest_sinks {
            for c in &self.columns {
                out.set(&Acc::Row(row), &cx(store, c.index, c.slot), store)?;
            }
        }
        self.system_sequence.iter().for_each(|&s| out.gather(s, row));
        Ok(())
    }

    /// Folds two versions or more (after `ignore_delete`) into one row: `+I`, or `-D` where
    /// a `-D` removed the row or no add came (output if `folder` keeps it).
    pub(crate) fn fold(
        &self,
        folder: &super::Folder,
        rows: &[RowRef],
        store: &BatchStore,
        out: &mut OutputBuilder,
    ) -> Result<()> {
        let newest = *rows.last().expect("two versions or more");
        let all_adds = !self.has_row_kinds || rows.iter().all(|&r| !store.is_retract(r));
        if self.newest_sinks && all_adds {
            out.push(newest, RowKind::Insert);
            out.candidates(rows);
            self.system_sequence.iter().for_each(|&s| out.gather(s, newest));
            return Ok(());
        }
        let mut row =
            Row { states: vec![State::default(); self.columns.len()], filled: false, inserted: false };
        let mut deleted = false;
        for &r in rows {
            deleted = false;
            if !store.is_retract(r) {
                match self.groups.is_empty() {
                    true => self.update_non_null(&mut row, r, store),
                    false => self.update_with_groups(&mut row, r, store)?,
                }
                row.inserted = true;
                row.filled = true;
                continue;
            }
            if !row.filled {
                row.fill(r);
                row.filled = true;
            }
            if !self.groups.is_empty() {
                deleted = self.retract_with_groups(&mut row, r, store)?;
            } else if self.remove_record_on_delete {
                if store.kind(r) == RowKind::Delete {
                    deleted = true;
                    row.fill(r);
                }
            } else {
                return Err(invalid!("{}: {}", super::location(store, r), refuses(store.kind(r))));
            }
        }
        let kind = if deleted || !row.inserted { RowKind::Delete } else { RowKind::Insert };
        if !folder.emit(newest, kind, out) {
            return Ok(());
        }
        for (c, state) in self.columns.iter().zip(&row.states) {
            out.set(&state.acc, &cx(store, c.index, c.slot), store)?;
        }
        self.system_sequence.iter().for_each(|&s| out.gather(s, newest));
        Ok(())
    }

    fn update_non_null(&self, row: &mut Row, r: RowRef, store: &BatchStore) {
        for (c, state) in self.columns.iter().zip(&mut row.states) {
            if !store.is_null(r, c.slot) {
                state.acc = Acc::Row(r);
            }
        }
    }

    /// How version `r` relates to the row so far, for each group (decided before the
    /// version changes anything, which is what Paimon's column-by-column loop amounts to).
    fn turns(&self, row: &Row, r: RowRef, store: &BatchStore) -> Vec<Turn> {
        self.groups
            .iter()
            .map(|group| {
                let columns = || group.ordering.iter().map(|&at| &self.columns[at]);
                if columns().all(|c| store.is_null(r, c.slot)) {
                    return Turn::Skip;
                }
                for (&at, c) in group.ordering.iter().zip(columns()) {
                    let cx = cx(store, c.index, c.slot);
                    let order = match (cx.value(&Acc::Row(r)), cx.value(&row.states[at].acc)) {
                        (Some(a), Some(b)) => java_compare(&a, &b),
                        // A null is older than any value.
                        (a, b) => a.is_some().cmp(&b.is_some()),
                    };
                    match order {
                        Ordering::Equal => continue,
                        Ordering::Greater => return Turn::Newer,
                        Ordering::Less => return Turn::Older,
                    }
                }
                Turn::Newer
            })
            .collect()
    }

    fn update_with_groups(&self, row: &mut Row, r: RowRef, store: &BatchStore) -> Result<()> {
        let turns = self.turns(row, r, store);
        for (c, state) in self.columns.iter().zip(&mut row.states) {
            let cx = cx(store, c.index, c.slot);
            let (turn, aggregate) = match (c.group, &c.aggregate) {
                (None, _) => {
                    // Outside groups only last_non_null_value applies: a non-null value wins.
                    if !store.is_null(r, c.slot) {
                        state.acc = Acc::Row(r);
                    }
                    continue;
                }
                (Some(g), aggregate) => (turns[g], aggregate),
            };
            let step = match (turn, aggregate) {
                (Turn::Skip, _) | (Turn::Older, None) => Ok(()),
                (Turn::Newer, None) => {
                    state.acc = Acc::Row(r);
                    Ok(())
                }
                (Turn::Newer, Some((_, a))) => a.agg(state, Acc::Row(r), &cx),
                (Turn::Older, Some((_, a))) => a.agg_reversed(state, Acc::Row(r), &cx),
            };
            step.map_err(|e| self.error(e, c, store, r))?;
        }
        Ok(())
    }

    /// See [`super::Folder::retract_refusal`]: without sequence groups, retracts are taken
    /// only with `remove_record_on_delete` (a `-D` removes the row, a `-U` is skipped); with
    /// groups, a retract reaches the groups' columns, whose aggregate functions must take
    /// it back.
    pub(crate) fn retract_refusal(&self, kind: RowKind) -> Option<String> {
        if self.groups.is_empty() {
            return (!self.remove_record_on_delete).then(|| refuses(kind));
        }
        self.columns.iter().find_map(|c| match (&c.group, &c.aggregate) {
            (Some(_), Some((function, a))) if !a.retracts() => Some(cannot_retract(&c.name, *function, kind)),
            _ => None,
        })
    }

    /// Applies a retract with sequence groups; `true` if it deleted the whole row.
    fn retract_with_groups(&self, row: &mut Row, r: RowRef, store: &BatchStore) -> Result<bool> {
        let turns = self.turns(row, r, store);
        let removes = self.groups.iter().zip(&turns).any(|(g, t)| g.removes_row && *t == Turn::Newer);
        if removes && store.kind(r) == RowKind::Delete {
            row.fill(r);
            return Ok(true);
        }
        for (at, (c, state)) in self.columns.iter().zip(&mut row.states).enumerate() {
            let Some(g) = c.group else { continue }; // a retract leaves other columns alone
            let cx = cx(store, c.index, c.slot);
            let ordering = self.groups[g].ordering.contains(&at);
            let step = match (turns[g], &c.aggregate) {
                (Turn::Skip, _) | (Turn::Older, None) => Ok(()),
                // The group's ordering columns move on to the retract's values.
                (Turn::Newer, None) if ordering => {
                    state.acc = Acc::Row(r);
                    Ok(())
                }
                (Turn::Newer, None) => {
                    state.acc = Acc::Null;
                    Ok(())
                }
                (_, Some((_, a))) => a.retract(state, Acc::Row(r), &cx),
            };
            step.map_err(|e| self.error(e, c, store, r))?;
        }
        Ok(false)
    }

    fn error(&self, e: AccError, c: &Column, store: &BatchStore, r: RowRef) -> crate::error::MergeError {
        let function = c.aggregate.as_ref().map_or(AggFunction::LastValue, |(f, _)| *f);
        acc_error(e, &c.name, function, store, r, &self.key)
    }
}

/// Why partial-update without sequence groups cannot fold a retract (Paimon's refuses them
/// unless told what a retract means).
fn refuses(kind: RowKind) -> String {
    format!(
        "merge function 'partial-update' cannot take a retract ({}) among several versions of a key; set \
         ignore_delete=True (drop retracts; Paimon: 'ignore-delete'), remove_record_on_delete=True (a -D removes \
         the row; 'partial-update.remove-record-on-delete') or sequence_groups (retract the groups' columns; \
         'fields.<ordering>.sequence-group')",
        kind.as_str()
    )
}

/// The row a key's versions fold into.
struct Row {
    states: Vec<State>,
    /// Some version has given the row its values (Paimon's `notNullColumnFilled`).
    filled: bool,
    /// Some add was folded (Paimon's `meetInsert`).
    inserted: bool,
}

impl Row {
    /// Every column takes the values of `r` (Paimon's `initRow`).
    fn fill(&mut self, r: RowRef) {
        self.states.iter_mut().for_each(|s| s.acc = Acc::Row(r));
    }
}
