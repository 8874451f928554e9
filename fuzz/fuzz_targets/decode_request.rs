//! Fuzz target: one request as it arrives after the size prefix. The first 4 bytes are the API
//! key and version (as in every request header); from them the header version is derived, the
//! header decoded and then the body, all of which must return `Ok` or `Err` without panicking.
//! Decoding the body under every other version of the same API too widens the search cheaply.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use strata::protocol::header::RequestHeader;
use strata::protocol::messages::validate_request;

fuzz_target!(|data: &[u8]| {
    let mut frame = Bytes::copy_from_slice(data);
    let Ok((header, _header_version)) = RequestHeader::decode_detect(&mut frame) else {
        return;
    };
    let _ = validate_request(header.api_key, header.api_version, &mut frame.clone());
    // The same body read as the neighbouring versions (classic <-> flexible boundaries).
    for v in [
        header.api_version.wrapping_sub(1),
        header.api_version.wrapping_add(1),
    ] {
        let _ = validate_request(header.api_key, v, &mut frame.clone());
    }
});
