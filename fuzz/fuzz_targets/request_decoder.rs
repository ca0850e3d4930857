//! Any bytes a peer sends as one frame: the decoder returns a request or an error, never
//! panics, and never allocates by a count the frame cannot back.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kdeck::wire::decode_request(bytes::Bytes::copy_from_slice(data));
});
