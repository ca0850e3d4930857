//! The request decoder never panics and never trusts a count: whatever a peer sends becomes a
//! request or an error that closes its connection.

use bytes::{BufMut, Bytes, BytesMut};
use kdeck::wire::{CodecError, RequestBody, decode_request, versions};
use proptest::prelude::*;

/// A frame with a valid header for `(api, version)` and `body` after it.
fn with_header(api: i16, version: i16, body: &[u8]) -> Bytes {
    let mut frame = BytesMut::new();
    frame.put_i16(api);
    frame.put_i16(version);
    frame.put_i32(1);
    frame.put_i16(-1);
    frame.put_slice(body);
    frame.freeze()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_frames_decode_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_request(Bytes::from(bytes));
    }

    #[test]
    fn random_bodies_of_every_supported_request_decode_or_fail_cleanly(
        which in 0..versions::SUPPORTED.len(),
        version_pick in any::<u16>(),
        body in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let (api, min, max) = versions::SUPPORTED[which];
        let version = min + (version_pick % (max - min + 1) as u16) as i16;
        let _ = decode_request(with_header(api as i16, version, &body));
    }
}

#[test]
fn short_frames_are_truncated() {
    assert!(matches!(
        decode_request(Bytes::from_static(&[0, 18, 0])),
        Err(CodecError::Truncated(3))
    ));
}

#[test]
fn unknown_api_keys_and_versions_are_errors() {
    assert!(matches!(
        decode_request(with_header(4242, 0, &[])),
        Err(CodecError::UnknownApiKey(4242))
    ));
    // Produce v10 is past kdeck's maximum (v9); Produce v0, as Kafka 3.9 serves it, is not.
    assert!(matches!(
        decode_request(with_header(0, 10, &[])),
        Err(CodecError::UnsupportedVersion { .. })
    ));
    assert!(!matches!(
        decode_request(with_header(0, 0, &[])),
        Err(CodecError::UnsupportedVersion { .. })
    ));
}

#[test]
fn an_api_versions_request_from_the_future_is_answered_not_parsed() {
    let request = decode_request(with_header(18, 99, b"\xff\xff garbage")).expect("accepted");
    assert!(matches!(request.body, RequestBody::ApiVersionsUnsupported));
    assert_eq!(request.correlation_id, 1);
}

#[test]
fn counts_larger_than_the_frame_are_malformed() {
    // Metadata v1: a topics array claiming i32::MAX entries in a few bytes.
    let mut body = BytesMut::new();
    body.put_i32(i32::MAX);
    assert!(matches!(
        decode_request(with_header(3, 1, &body)),
        Err(CodecError::Malformed { .. })
    ));
    // Metadata v9 (flexible): a compact array claiming u32::MAX - 1 entries.
    let mut frame = BytesMut::new();
    frame.put_i16(3);
    frame.put_i16(9);
    frame.put_i32(1);
    frame.put_i16(-1);
    frame.put_u8(0);
    frame.put_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert!(matches!(
        decode_request(frame.freeze()),
        Err(CodecError::Malformed { .. })
    ));
}
