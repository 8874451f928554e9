//! Seeds of the fuzz targets `raft_rpc` and `metadata_records` (`fuzz/corpus/<target>/`): real
//! encodings of every raft RPC and reply, of the metadata log file, of a snapshot file and of a
//! list of metadata records. Each seed must decode with the decoder its target fuzzes, so a
//! change to the wire or file format shows here first. With `STRATA_WRITE_FUZZ_SEEDS=<fuzz
//! dir>` the test also (re)writes the corpus files.
use std::collections::BTreeMap;

use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{CommittedLeaderId, EntryPayload, LogId, SnapshotMeta, StoredMembership, Vote};

use crate::controller::image::MetadataImage;
use crate::controller::quorum::NodeId;
use crate::controller::raft::log_store::{decode_frames, encode_frame};
use crate::controller::raft::network::{
    decode_envelope, encode, RaftEnvelope, RaftRpc, RaftRpcReply,
};
use crate::controller::raft::observer::{FetchBody, ObserverFetch, ObserverFetchReply};
use crate::controller::raft::types::{Entry, SnapshotFile};
use crate::controller::raft::voters::{JoinReply, JoinRequest};
use crate::controller::records::{BrokerEndpoint, MetadataRecord, RESOURCE_TOPIC};

const TOPIC_ID: [u8; 16] = [7; 16];

/// One record of each kind, in an order that applies cleanly to an empty image.
fn records() -> Vec<MetadataRecord> {
    vec![
        MetadataRecord::RegisterBroker {
            broker_id: 1,
            broker_epoch: 10,
            incarnation_id: "AAAAAAAAAAAAAAAAAAAAAA".into(),
            endpoints: vec![BrokerEndpoint {
                name: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9092,
                security_protocol: 0,
            }],
            rack: Some("r1".into()),
            fenced: true,
            log_dirs: vec![[1; 16]],
            features: vec![("metadata.version".into(), 17, 26)],
        },
        MetadataRecord::UnfenceBroker {
            broker_id: 1,
            broker_epoch: 10,
        },
        MetadataRecord::BrokerRegistrationChange {
            broker_id: 1,
            broker_epoch: 10,
            log_dirs: vec![[1; 16], [2; 16]],
        },
        MetadataRecord::Topic {
            name: "t".into(),
            topic_id: TOPIC_ID,
        },
        MetadataRecord::Partition {
            topic_id: TOPIC_ID,
            partition: 0,
            replicas: vec![1],
            isr: vec![1],
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 0,
            adding_replicas: vec![],
            removing_replicas: vec![],
            directories: vec![[1; 16]],
        },
        MetadataRecord::PartitionChange {
            topic_id: TOPIC_ID,
            partition: 0,
            leader: Some(1),
            isr: Some(vec![1]),
            replicas: None,
            adding_replicas: None,
            removing_replicas: None,
            directories: None,
        },
        MetadataRecord::Config {
            resource_type: RESOURCE_TOPIC,
            resource_name: "t".into(),
            name: "cleanup.policy".into(),
            value: Some("compact".into()),
        },
        MetadataRecord::ProducerIds {
            broker_id: 1,
            broker_epoch: 10,
            next_producer_id: 1000,
        },
        MetadataRecord::BrokerControlledShutdown {
            broker_id: 1,
            broker_epoch: 10,
        },
        MetadataRecord::FenceBroker {
            broker_id: 1,
            broker_epoch: 10,
        },
        MetadataRecord::FeatureLevel {
            name: "metadata.version".into(),
            level: 26,
        },
        MetadataRecord::RemoveTopic { topic_id: TOPIC_ID },
        MetadataRecord::UnregisterBroker {
            broker_id: 1,
            broker_epoch: 10,
        },
    ]
}

fn log_id(term: u64, index: u64) -> LogId<NodeId> {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

fn entries() -> Vec<Entry<MetadataImage>> {
    let mut out = vec![Entry::<MetadataImage> {
        log_id: log_id(1, 1),
        payload: EntryPayload::Blank,
    }];
    for (i, r) in records().into_iter().enumerate() {
        out.push(Entry::<MetadataImage> {
            log_id: log_id(1, 2 + i as u64),
            payload: EntryPayload::Normal(vec![r]),
        });
    }
    out
}

fn envelope(rpc: RaftRpc<MetadataImage>) -> Vec<u8> {
    encode(&RaftEnvelope {
        cluster_id: "MkU3OEVBNTcwNTJENDM2Qg".into(),
        destination_id: 2,
        rpc,
    })
    .to_vec()
}

fn raft_rpc_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let vote = Vote::new_committed(1, 1);
    let voters = BTreeMap::from([(1 as NodeId, "127.0.0.1:9093".to_string())]);
    vec![
        (
            "vote",
            envelope(RaftRpc::Vote(VoteRequest {
                vote: Vote::new(2, 1),
                last_log_id: Some(log_id(1, 5)),
            })),
        ),
        (
            "append_entries",
            envelope(RaftRpc::AppendEntries(AppendEntriesRequest {
                vote,
                prev_log_id: Some(log_id(1, 0)),
                entries: entries(),
                leader_commit: Some(log_id(1, 1)),
            })),
        ),
        (
            "install_snapshot",
            envelope(RaftRpc::InstallSnapshot(InstallSnapshotRequest {
                vote,
                meta: SnapshotMeta {
                    last_log_id: Some(log_id(1, 5)),
                    last_membership: StoredMembership::default(),
                    snapshot_id: "1-1-5".into(),
                },
                offset: 0,
                data: snapshot_file(),
                done: true,
            })),
        ),
        (
            "observer_fetch",
            envelope(RaftRpc::ObserverFetch(ObserverFetch {
                observer_id: 3,
                after_index: 4,
                max_wait_ms: 500,
            })),
        ),
        (
            "join",
            envelope(RaftRpc::Join(JoinRequest {
                node_id: 4,
                learner_addr: Some("127.0.0.1:9094".into()),
            })),
        ),
        (
            "reply_append_entries",
            encode(&RaftRpcReply::AppendEntries(Ok(
                AppendEntriesResponse::PartialSuccess(Some(log_id(1, 3))),
            )))
            .to_vec(),
        ),
        (
            "reply_vote",
            encode(&RaftRpcReply::Vote(Ok(VoteResponse {
                vote,
                vote_granted: true,
                last_log_id: Some(log_id(1, 5)),
            })))
            .to_vec(),
        ),
        (
            "reply_install_snapshot",
            encode(&RaftRpcReply::InstallSnapshot(Ok(
                InstallSnapshotResponse { vote },
            )))
            .to_vec(),
        ),
        (
            "reply_join",
            encode(&RaftRpcReply::Join(JoinReply {
                cluster_id: "MkU3OEVBNTcwNTJENDM2Qg".into(),
                leader_id: Some(1),
                leader_epoch: 1,
                voters: voters.clone(),
                member: true,
                responder_id: Some(2),
            }))
            .to_vec(),
        ),
        (
            "reply_error",
            encode(&RaftRpcReply::Error("undecodable raft rpc".into())).to_vec(),
        ),
        (
            "reply_observer_entries",
            encode(&ObserverFetchReply::<MetadataImage> {
                leader_id: Some(1),
                leader_epoch: 1,
                body: FetchBody::Entries(vec![(2, records())]),
                voters: voters.clone(),
            })
            .to_vec(),
        ),
        (
            "reply_observer_state",
            encode(&ObserverFetchReply::<MetadataImage> {
                leader_id: Some(1),
                leader_epoch: 1,
                body: FetchBody::State {
                    index: 5,
                    state: image(),
                },
                voters,
            })
            .to_vec(),
        ),
    ]
}

fn image() -> MetadataImage {
    let mut image = MetadataImage::default();
    // Up to the partition change: a broker, a topic, a partition, a config.
    for r in records().iter().take(7) {
        image.apply(r);
    }
    image
}

fn snapshot_file() -> Vec<u8> {
    encode(&SnapshotFile::<MetadataImage> {
        last_applied: Some(log_id(1, 5)),
        last_membership: StoredMembership::default(),
        snapshot_id: "1-1-5".into(),
        state: image(),
    })
    .to_vec()
}

fn metadata_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut log = Vec::new();
    for e in entries() {
        encode_frame(&e, &mut log).unwrap();
    }
    let mut torn = log.clone();
    torn.truncate(log.len() - 3);
    vec![
        ("log_file", log),
        ("log_file_torn_tail", torn),
        ("snapshot_file", snapshot_file()),
        ("records", encode(&records()).to_vec()),
    ]
}

#[test]
fn fuzz_seeds_decode_with_the_decoders_their_targets_fuzz() {
    for (name, seed) in raft_rpc_seeds() {
        let decoded = if name.starts_with("reply_observer") {
            serde_json::from_slice::<ObserverFetchReply<MetadataImage>>(&seed).is_ok()
        } else if name.starts_with("reply_") {
            serde_json::from_slice::<RaftRpcReply>(&seed).is_ok()
        } else {
            decode_envelope::<MetadataImage>(&seed).is_ok()
        };
        assert!(decoded, "raft_rpc seed {name} decodes");
    }
    let seeds = metadata_seeds();
    let (entries_read, valid) = decode_frames::<MetadataImage>(&seeds[0].1, None);
    assert_eq!(entries_read.len(), entries().len());
    assert_eq!(valid as usize, seeds[0].1.len());
    let (torn_read, _) = decode_frames::<MetadataImage>(&seeds[1].1, None);
    assert_eq!(
        torn_read.len(),
        entries().len() - 1,
        "the torn frame is dropped"
    );
    assert!(serde_json::from_slice::<SnapshotFile<MetadataImage>>(&seeds[2].1).is_ok());
    assert_eq!(
        serde_json::from_slice::<Vec<MetadataRecord>>(&seeds[3].1).unwrap(),
        records()
    );

    if let Ok(dir) = std::env::var("STRATA_WRITE_FUZZ_SEEDS") {
        let fuzz = std::path::Path::new(&dir);
        for (target, seeds) in [
            ("raft_rpc", raft_rpc_seeds()),
            ("metadata_records", metadata_seeds()),
        ] {
            let out = fuzz.join("corpus").join(target);
            std::fs::create_dir_all(&out).unwrap();
            for (name, seed) in seeds {
                std::fs::write(out.join(format!("seed-{name}")), seed).unwrap();
            }
        }
    }
}
