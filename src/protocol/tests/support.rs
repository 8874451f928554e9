//! Test support for the protocol layer: a tiny deterministic xorshift generator, the `Sample`
//! trait that `build.rs` implements for every generated struct, the visitor traits the
//! generated `visit_all` / `visit_kafka_protocol_pairs` drive, and a per-thread allocation
//! counter used to check that decoding never allocates more than its input warrants.
//!
//! Depends only on the codec primitives; nothing here is compiled outside `cfg(test)`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt::Debug;

use crate::protocol::codec::{Bytes, Decode, Encode, RawTaggedField, Uuid};

/// xorshift64* — small, fast and the same sequence on every platform for a given seed.
#[derive(Debug, Clone)]
pub struct TestRng(u64);

impl TestRng {
    pub fn new(seed: u64) -> Self {
        // A zero state would stay zero forever.
        TestRng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform-enough value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn bool(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }

    /// A finite float (NaN would break the equality the round-trips rely on).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() % 2_000_001) as f64 / 8.0 - 125_000.0
    }

    /// 0..8 characters, mostly ASCII with the odd multi-byte one to exercise byte lengths.
    pub fn string(&mut self) -> String {
        const CHARS: &[char] = &[
            'a', 'b', 'z', 'A', '0', '9', '-', '_', '.', ' ', 'é', '€', '𝄞',
        ];
        let n = self.below(8);
        (0..n).map(|_| CHARS[self.below(CHARS.len())]).collect()
    }

    pub fn bytes(&mut self) -> Bytes {
        let n = self.below(8);
        Bytes::from((0..n).map(|_| self.next_u64() as u8).collect::<Vec<u8>>())
    }

    pub fn uuid(&mut self) -> Uuid {
        let mut u = [0u8; 16];
        u[..8].copy_from_slice(&self.next_u64().to_be_bytes());
        u[8..].copy_from_slice(&self.next_u64().to_be_bytes());
        Uuid(u)
    }

    /// 1..3 unknown tagged fields with distinct, ascending tags well above any tag Kafka uses.
    pub fn unknown_tagged_fields(&mut self) -> Vec<RawTaggedField> {
        let n = 1 + self.below(3);
        let mut tag = 1000 + self.below(50) as u32;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(RawTaggedField {
                tag,
                data: self.bytes(),
            });
            tag += 1 + self.below(300) as u32;
        }
        out
    }
}

/// A random value of a generated struct that is valid at `version`: only fields the version
/// carries are set, and null only where the version allows it.
pub trait Sample: Sized {
    fn sample(rng: &mut TestRng, version: i16) -> Self;
}

/// What a generated message must offer the tests.
pub trait TestMessage:
    Sample + Encode + Decode + PartialEq + Debug + Default + Clone + 'static
{
}
impl<T: Sample + Encode + Decode + PartialEq + Debug + Default + Clone + 'static> TestMessage
    for T
{
}

/// Driven by the generated `visit_all`: one call per top-level message.
pub trait Visitor {
    fn visit<T: TestMessage>(
        &mut self,
        name: &'static str,
        kind: &'static str,
        api_key: i16,
        min: i16,
        max: i16,
    );
}

/// Driven by the generated `visit_kafka_protocol_pairs`: one call per message that the
/// `kafka-protocol` crate also defines, with its type as `K`.
pub trait PairVisitor {
    fn visit<T, K>(&mut self, name: &'static str, kind: &'static str, min: i16, max: i16)
    where
        T: TestMessage,
        K: kafka_protocol::protocol::Encodable
            + kafka_protocol::protocol::Decodable
            + kafka_protocol::protocol::Message
            + Default
            + Debug;
}

/// Driven by the generated `visit_kafka_protocol_apis`: `kafka-protocol`'s request and
/// response types of one API, for header-version checks.
pub trait ApiVisitor {
    fn visit<Req, Resp>(&mut self, api_key: i16, min: i16, max: i16)
    where
        Req: kafka_protocol::protocol::HeaderVersion + kafka_protocol::protocol::Message,
        Resp: kafka_protocol::protocol::HeaderVersion;
}

/// Every message of both generated folders.
pub fn visit_every_message(v: &mut impl Visitor) {
    crate::protocol::messages::visit_all(v);
    crate::protocol::internal_records::visit_all(v);
}

// ---- allocation accounting -------------------------------------------------------------

/// Passes everything to the system allocator and counts, per thread, the bytes requested.
struct CountingAlloc;

thread_local! {
    static ALLOCATED: Cell<u64> = const { Cell::new(0) };
}

fn count(n: usize) {
    // `try_with` because allocation can happen while a thread's locals are being torn down.
    let _ = ALLOCATED.try_with(|c| c.set(c.get().wrapping_add(n as u64)));
}

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Bytes this thread has requested from the allocator so far (a monotonic counter).
pub fn allocated_bytes() -> u64 {
    ALLOCATED.try_with(|c| c.get()).unwrap_or(0)
}
