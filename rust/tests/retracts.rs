//! A write's refusal of retracts agrees with the fold: `MergeFunction::retract_refusal`
//! names a reason exactly when folding an add and then that retract of one key fails
//! with the same reason, for every merge engine, every aggregate function and the
//! options that let retracts through.

use std::sync::Arc;

use arrow_array::builder::{Int64Builder, ListBuilder, MapBuilder};
use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::runs::version::{RowKind, VersionColumns};
use crate::{merge, AggFunction, AggregateField, MergeFunction, MergeOptions, Run, SequenceGroup};

/// A value column of each type some aggregate function takes, one row long.
fn values(data_type: &str) -> ArrayRef {
    match data_type {
        "int" => Arc::new(Int64Array::from(vec![5])),
        "str" => Arc::new(StringArray::from(vec!["a"])),
        "bool" => Arc::new(BooleanArray::from(vec![true])),
        "list" => {
            let mut list = ListBuilder::new(Int64Builder::new());
            list.values().append_value(1);
            list.append(true);
            Arc::new(list.finish())
        }
        _ => {
            let mut map = MapBuilder::new(None, Int64Builder::new(), Int64Builder::new());
            map.keys().append_value(1);
            map.values().append_value(2);
            map.append(true).unwrap();
            Arc::new(map.finish())
        }
    }
}

fn schema(v: &ArrayRef) -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", v.data_type().clone(), true),
        Field::new("g", DataType::Int64, true),
        Field::new("kind", DataType::Utf8, false),
    ]))
}

fn run(v: &ArrayRef, kind: &str) -> Run {
    let schema = schema(v);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![1])),
        v.clone(),
        Arc::new(Int64Array::from(vec![1])),
        Arc::new(StringArray::from(vec![kind])),
    ];
    Run::from_batches(schema.clone(), vec![RecordBatch::try_new(schema, columns).unwrap()])
}

/// Every engine and option that decides whether a retract is taken, with the value type.
fn cases() -> Vec<(MergeFunction, &'static str)> {
    use AggFunction::*;
    let aggregate =
        |function, ignore_retract, remove_record_on_delete, ignore_delete| MergeFunction::Aggregate {
            fields: vec![("v".into(), AggregateField { ignore_retract, ..AggregateField::new(function) })],
            default: LastValue,
            remove_record_on_delete,
            ignore_delete,
            drop_deletes: true,
        };
    let mut all = vec![
        (MergeFunction::default(), "int"),
        (MergeFunction::FirstRow { ignore_delete: false, drop_deletes: true }, "int"),
        (MergeFunction::FirstRow { ignore_delete: true, drop_deletes: true }, "int"),
        (MergeFunction::partial_update(), "int"),
    ];
    for (ignore_delete, remove_record_on_delete) in [(true, false), (false, true)] {
        all.push((
            MergeFunction::PartialUpdate {
                ignore_delete,
                remove_record_on_delete,
                sequence_groups: Vec::new(),
                fields: Vec::new(),
                default: None,
                remove_record_on_sequence_group: Vec::new(),
                drop_deletes: true,
            },
            "int",
        ));
    }
    for function in [Sum, Product, Max, LastValue, ListAgg] {
        let data_type = if function == ListAgg { "str" } else { "int" };
        all.push((
            MergeFunction::PartialUpdate {
                ignore_delete: false,
                remove_record_on_delete: false,
                sequence_groups: vec![SequenceGroup { ordering: vec!["g".into()], fields: vec!["v".into()] }],
                fields: vec![("v".into(), AggregateField::new(function))],
                default: None,
                remove_record_on_sequence_group: Vec::new(),
                drop_deletes: true,
            },
            data_type,
        ));
    }
    for (function, data_type) in [
        (Sum, "int"),
        (Product, "int"),
        (Min, "int"),
        (Max, "int"),
        (LastValue, "int"),
        (LastNonNullValue, "int"),
        (FirstValue, "int"),
        (FirstNonNullValue, "int"),
        (ListAgg, "str"),
        (BoolAnd, "bool"),
        (BoolOr, "bool"),
        (Collect, "list"),
        (MergeMap, "map"),
        (PrimaryKey, "int"),
    ] {
        all.push((aggregate(function, false, false, false), data_type));
        all.push((aggregate(function, true, false, false), data_type));
        all.push((aggregate(function, false, true, false), data_type));
        all.push((aggregate(function, false, false, true), data_type));
    }
    all
}

#[test]
fn a_write_refuses_exactly_the_retracts_the_fold_cannot_take() {
    let mut refused = 0;
    for (function, data_type) in cases() {
        for kind in [RowKind::UpdateBefore, RowKind::Delete] {
            let v = values(data_type);
            let versions = VersionColumns { row_kind: Some("kind".into()), ..VersionColumns::default() };
            let refusal = function.retract_refusal(schema(&v), &["k".into()], &versions, kind).unwrap();
            let mut options = MergeOptions::new(&["k"]);
            options.merge = function.clone();
            options.versions = versions;
            let folded = merge(vec![run(&v, "+I"), run(&v, kind.as_str())], options)
                .and_then(|s| s.collect::<crate::Result<Vec<_>>>());
            match (&refusal, folded) {
                (None, Ok(_)) => {}
                (Some(reason), Err(e)) => {
                    assert!(
                        e.to_string().ends_with(reason.as_str()),
                        "{function:?} {kind:?}: {e} / {reason}"
                    );
                    refused += 1;
                }
                (refusal, folded) => {
                    panic!("{function:?} {kind:?}: refusal {refusal:?}, fold {:?}", folded.err())
                }
            }
        }
    }
    assert!(refused > 20, "the cases refuse some retracts: {refused}");
}

#[test]
fn a_retract_keeps_a_primary_key_columns_value_where_last_value_drops_it() {
    use AggFunction::*;
    for (function, kept) in [(PrimaryKey, Some(5)), (LastValue, None)] {
        let v = values("int");
        let mut options = MergeOptions::new(&["k"]);
        options.versions = VersionColumns { row_kind: Some("kind".into()), ..VersionColumns::default() };
        options.merge = MergeFunction::Aggregate {
            fields: vec![("v".into(), AggregateField::new(function))],
            default: LastValue,
            remove_record_on_delete: false,
            ignore_delete: false,
            drop_deletes: true,
        };
        let out: Vec<RecordBatch> = merge(vec![run(&v, "+I"), run(&v, "-U")], options)
            .unwrap()
            .collect::<crate::Result<_>>()
            .unwrap();
        let column = out[0].column(1).as_any().downcast_ref::<Int64Array>().unwrap();
        let got = (!column.is_null(0)).then(|| column.value(0));
        assert_eq!(got, kept, "{function:?}");
    }
}
