//! Fuzz target: the metadata log as a controller or broker reads it back and applies it. The
//! input is read as the raft log file (`decode_frames`: length, CRC-32C, JSON entry; a torn or
//! corrupt tail ends the valid prefix), whose records are applied in order to an empty
//! `MetadataImage`; as a snapshot file (`SnapshotFile<MetadataImage>`); and as a JSON list of
//! `MetadataRecord`s applied in order. None may panic: a record the image cannot use is
//! skipped (and logged), as Kafka's image builders skip what they cannot apply.
#![no_main]

use libfuzzer_sys::fuzz_target;
use openraft::EntryPayload;
use strata::controller::image::MetadataImage;
use strata::controller::raft::log_store::decode_frames;
use strata::controller::raft::types::SnapshotFile;
use strata::controller::records::MetadataRecord;

fuzz_target!(|data: &[u8]| {
    let (entries, valid) = decode_frames::<MetadataImage>(data, None);
    assert!(valid as usize <= data.len());
    let mut image = MetadataImage::default();
    for (_, (_, entry)) in &entries {
        if let EntryPayload::Normal(records) = &entry.payload {
            for r in records {
                image.apply(r);
            }
        }
    }
    if let Ok(mut snapshot) = serde_json::from_slice::<SnapshotFile<MetadataImage>>(data) {
        // Records keep being applied on top of a restored snapshot.
        for (_, (_, entry)) in &entries {
            if let EntryPayload::Normal(records) = &entry.payload {
                for r in records {
                    snapshot.state.apply(r);
                }
            }
        }
    }
    if let Ok(records) = serde_json::from_slice::<Vec<MetadataRecord>>(data) {
        let mut image = MetadataImage::default();
        for r in &records {
            image.apply(r);
        }
    }
});
