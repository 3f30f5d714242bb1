//! Properties of the tolerant JSON reader: it never panics on any input, it reads every
//! standard JSON text exactly as `serde_json` does (it is a superset), and what the fastjson
//! key writer produces reads back with keys normalized as documented.

use proptest::prelude::*;
use rocketmq_proto::json::{self, Value};

/// Arbitrary JSON values within serde_json's nesting limit.
fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "(?s).{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("(?s).{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Equality, except that floats may differ in the last bit: serde_json's default float parser
/// (without its `float_roundtrip` feature) is not correctly rounded for long mantissas, while the
/// standard library's is.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() && y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x == y || (x - y).abs() <= x.abs().max(y.abs()) * 4.0 * f64::EPSILON
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| kx == ky && same(vx, vy))
        }
        _ => a == b,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = json::parse(&bytes);
    }

    #[test]
    fn never_panics_on_json_like_text(text in r#"[\[\]{}:,"\\0-9a-fu .eE+\-tn\x00\xff]{0,256}"#) {
        let _ = json::parse(text.as_bytes());
    }

    #[test]
    fn reads_standard_json_like_serde_json(value in arb_value(), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_string_pretty(&value).unwrap()
        } else {
            serde_json::to_string(&value).unwrap()
        };
        prop_assert_eq!(json::parse(text.as_bytes()).unwrap(), value);
    }

    #[test]
    fn accepts_whatever_serde_json_accepts(
        value in arb_value(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut text = serde_json::to_vec(&value).unwrap();
        let i = at.index(text.len());
        text[i] = byte;
        if let Ok(expected) = serde_json::from_slice::<Value>(&text) {
            let parsed = json::parse(&text).unwrap();
            prop_assert!(same(&parsed, &expected), "{parsed} vs {expected}");
        }
    }

    #[test]
    fn fastjson_keys_read_back_normalized(
        entries in prop::collection::btree_map(any::<i64>(), arb_value(), 0..6),
    ) {
        let mut out = Vec::new();
        json::write_keyed_map(&mut out, &entries).unwrap();
        let parsed = json::parse(&out).unwrap();
        let expected: serde_json::Map<String, Value> =
            entries.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        prop_assert_eq!(parsed, Value::Object(expected));
    }
}
