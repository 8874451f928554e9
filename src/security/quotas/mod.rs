//! Client quotas, enforced as Kafka enforces them (KIP-13, KIP-124, KIP-219, KIP-599): each
//! quota type has a manager ([`manager`]) measuring each client's rate over sample windows
//! ([`rate`]) against the quota of the most specific entity that sets one, in the metadata
//! image (`controller::client_quotas`). A client over its quota gets the throttle time in its
//! response at once and its connection reads no further request for that long (KIP-219).
pub mod manager;
pub mod mutation;
pub mod rate;

pub use manager::{resolve, ClientQuotaManager, QuotaType, ResolvedQuota};
pub use mutation::{ControllerMutationQuotaManager, MutationQuota, QuotaExceeded};

/// The managers of one broker, one per quota type: the byte rates and the request quota share
/// `quota.window.num` and `quota.window.size.seconds`, the controller mutation quota has its
/// own `controller.quota.window.*` (as Kafka's).
pub struct QuotaManagers {
    pub produce: ClientQuotaManager,
    pub fetch: ClientQuotaManager,
    pub request: ClientQuotaManager,
    pub controller_mutation: ControllerMutationQuotaManager,
}

impl QuotaManagers {
    pub fn new(
        quota_window_num: i32,
        quota_window_size_seconds: i32,
        controller_quota_window_num: i32,
        controller_quota_window_size_seconds: i32,
    ) -> QuotaManagers {
        let samples = quota_window_num.max(1) as usize;
        let window_ms = quota_window_size_seconds.max(1) as i64 * 1000;
        QuotaManagers {
            produce: ClientQuotaManager::new(QuotaType::Produce, samples, window_ms, None),
            fetch: ClientQuotaManager::new(QuotaType::Fetch, samples, window_ms, None),
            // Kafka caps a request-time throttle at one window.
            request: ClientQuotaManager::new(
                QuotaType::Request,
                samples,
                window_ms,
                Some(window_ms),
            ),
            controller_mutation: ControllerMutationQuotaManager::new(
                controller_quota_window_num.max(1) as usize,
                controller_quota_window_size_seconds.max(1) as i64 * 1000,
            ),
        }
    }
}
