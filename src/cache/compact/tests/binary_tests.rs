//! The compact form in bytes ([`super::super::binary`]).

use super::super::binary::{Decoder, Encoder, KEY, OBJECT, TREE_RECORD, read_varint};
use super::super::table::WELL_KNOWN;
use super::*;

/// The records of `bytes`, as (tag, payload).
fn records(bytes: &[u8]) -> Vec<(u8, &[u8])> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while let Some((&tag, mut tail)) = rest.split_first() {
        let len = read_varint(|| {
            let (&b, after) = tail.split_first().ok_or("ends early")?;
            tail = after;
            Ok(b)
        })
        .unwrap() as usize;
        out.push((tag, &tail[..len]));
        rest = &tail[len..];
    }
    out
}

/// Encodes `objects` with one encoder, decodes them with one decoder.
fn through_bytes(objects: &[CompactObject]) -> (Vec<CompactObject>, Vec<u8>, Decoder) {
    let mut encoder = Encoder::for_objects_like(&objects[0]);
    let mut bytes = Vec::new();
    for o in objects {
        assert!(encoder.takes(o));
        encoder.object(o, &mut bytes);
    }
    let mut decoder = Decoder::default();
    let back = records(&bytes)
        .into_iter()
        .filter_map(|(tag, payload)| decoder.record(tag, payload).expect("a record"))
        .collect();
    (back, bytes, decoder)
}

#[test]
fn objects_read_back_equal_with_keys_and_trees_written_once() {
    let mut interner = Interner::new();
    let (a, b) = widget_and_copy("other");
    let compact = [
        CompactObject::from_object(&a, &mut interner),
        CompactObject::from_object(&b, &mut interner),
    ];
    let (back, bytes, decoder) = through_bytes(&compact);
    assert_eq!(back, compact);
    assert_eq!(back[1].to_object(), b);
    let tags: Vec<u8> = records(&bytes).iter().map(|(t, _)| *t).collect();
    assert_eq!(tags.iter().filter(|t| **t == OBJECT).count(), 2);
    assert_eq!(tags.iter().filter(|t| **t == TREE_RECORD).count(), 1);
    assert_eq!(
        tags.iter().filter(|t| **t == KEY).count(),
        interner.keys() - WELL_KNOWN.len(),
        "each key once"
    );
    // Read back, the objects are their bytes as written, over tables
    // numbered as the writer's: an object built later with the decoder's
    // interner is the same bytes as one built with the writer's.
    for (back, written) in back.iter().zip(&compact) {
        assert_eq!(back.bytes(), written.bytes());
    }
    let mut interner = decoder.into_interner();
    let later = CompactObject::from_object(&b, &mut interner);
    assert_eq!(later.bytes(), back[1].bytes());
}

#[test]
fn every_byte_changed_or_cut_is_refused_or_read_without_panic() {
    let mut interner = Interner::new();
    let compact = [CompactObject::from_object(&decoded(WIDGET), &mut interner)];
    let (_, bytes, _) = through_bytes(&compact);
    let all = records(&bytes);
    let (last_tag, object) = *all.last().unwrap();
    assert_eq!(last_tag, OBJECT);
    let defined = |decoder: &mut Decoder| {
        for (tag, payload) in &all[..all.len() - 1] {
            decoder.record(*tag, payload).unwrap();
        }
    };
    let mut refused = 0;
    for cut in 0..object.len() {
        let mut decoder = Decoder::default();
        defined(&mut decoder);
        refused += usize::from(decoder.record(OBJECT, &object[..cut]).is_err());
    }
    assert_eq!(refused, object.len(), "every cut object is refused");
    for at in 0..object.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut changed = object.to_vec();
            changed[at] ^= flip;
            let mut decoder = Decoder::default();
            defined(&mut decoder);
            let _ = decoder.record(OBJECT, &changed);
        }
    }
    let mut decoder = Decoder::default();
    let err = decoder.record(OBJECT, object).unwrap_err();
    assert!(err.contains("is not defined"), "{err}");
    assert!(
        decoder
            .record(b'?', b"")
            .unwrap_err()
            .contains("unknown record")
    );
}

#[test]
fn nesting_beyond_the_wire_s_limit_is_refused() {
    let mut value = json!("leaf");
    for _ in 0..crate::wire::MAX_OBJECT_DEPTH + 2 {
        value = json!([value]);
    }
    let o = object(
        json!({"apiVersion": "v1", "kind": "K", "metadata": {"name": "deep"}, "spec": value}),
    );
    let mut interner = Interner::without_shared_trees();
    let c = CompactObject::from_object(&o, &mut interner);
    let mut bytes = Vec::new();
    Encoder::for_objects_like(&c).object(&c, &mut bytes);
    let mut decoder = Decoder::default();
    let err = records(&bytes)
        .into_iter()
        .map(|(tag, payload)| decoder.record(tag, payload))
        .find_map(Result::err)
        .expect("refused");
    assert!(err.contains("levels deep"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_objects_read_back_equal(objects in prop::collection::vec(arb_object(), 1..4)) {
        let mut interner = Interner::new();
        let compact: Vec<_> = objects.iter().map(|o| CompactObject::from_object(o, &mut interner)).collect();
        let (back, _, _) = through_bytes(&compact);
        prop_assert_eq!(&back, &compact);
        for (c, o) in back.iter().zip(&objects) {
            prop_assert_eq!(&c.to_object(), o);
        }
    }
}

#[test]
fn trees_read_back_differing_only_in_number_representation_stay_apart() {
    let tree = |n: Value| {
        let mut o = decoded(WIDGET);
        o.metadata.managed_fields.as_mut().unwrap()[0].fields_v1 = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1(json!({ "f:x": n })),
        );
        o
    };
    let (zero, minus_zero) = (tree(json!(0.0)), tree(json!(-0.0)));
    let mut interner = Interner::new();
    let compact = [
        CompactObject::from_object(&zero, &mut interner),
        CompactObject::from_object(&minus_zero, &mut interner),
    ];
    let (back, _, _) = through_bytes(&compact);
    assert_eq!(back[0].to_object(), zero);
    assert_eq!(
        serde_json::to_string(&back[1].to_object()).unwrap(),
        serde_json::to_string(&minus_zero).unwrap()
    );
}

#[test]
fn a_snapshot_holds_an_objects_bytes_without_its_digests() {
    let mut interner = Interner::new();
    let o = decoded(WIDGET);
    // Built alike: the first writes its `fieldsV1` tree in place.
    CompactObject::from_object(&o, &mut interner);
    let fields: Vec<Box<str>> = ["spec", "status"].map(Into::into).into();
    let digested = CompactObject::digesting(&o, &mut interner, &fields);
    let plain = CompactObject::from_object(&o, &mut interner);
    let (_, with, _) = through_bytes(std::slice::from_ref(&digested));
    let (back, without, _) = through_bytes(std::slice::from_ref(&plain));
    assert_eq!(with, without);
    assert_eq!(back[0].bytes(), plain.bytes());
    assert_eq!(back[0].to_object(), o);
    assert_eq!(back[0].same_field(&back[0], "spec"), None);
}
