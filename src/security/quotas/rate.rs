//! A rate measured over sample windows, as Kafka's `Rate` over a `SampledStat`: values are
//! summed into `quota.window.num` samples of `quota.window.size.seconds` each, samples older
//! than all the windows together are reset, and the rate divides the sum by the time the
//! samples span, counted as at least `quota.window.num - 1` whole windows (so one burst after
//! a quiet spell is measured over the full span, not over the first milliseconds).

/// One sample window: the values recorded since `start_ms`.
#[derive(Debug, Clone, Copy)]
struct Sample {
    start_ms: i64,
    value: f64,
}

impl Sample {
    fn new(now_ms: i64) -> Sample {
        Sample {
            start_ms: now_ms,
            value: 0.0,
        }
    }
}

/// A per-second rate over `num_samples` windows of `window_ms`.
#[derive(Debug, Clone)]
pub struct SampledRate {
    samples: Vec<Sample>,
    current: usize,
    num_samples: usize,
    window_ms: i64,
}

impl SampledRate {
    pub fn new(num_samples: usize, window_ms: i64) -> SampledRate {
        SampledRate {
            samples: Vec::with_capacity(num_samples.max(1)),
            current: 0,
            num_samples: num_samples.max(1),
            window_ms: window_ms.max(1),
        }
    }

    /// Adds `value` at `now_ms` to the current window, starting the next one once the current
    /// has lasted `window_ms`.
    pub fn record(&mut self, value: f64, now_ms: i64) {
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now_ms));
            self.current = 0;
        }
        if now_ms >= self.samples[self.current].start_ms + self.window_ms {
            self.current = (self.current + 1) % self.num_samples;
            if self.current >= self.samples.len() {
                self.samples.push(Sample::new(now_ms));
            } else {
                self.samples[self.current] = Sample::new(now_ms);
            }
        }
        self.samples[self.current].value += value;
    }

    /// Takes back a value recorded at `now_ms` (Kafka's fetch quota un-records the bytes of a
    /// response it replaces with an empty, throttled one).
    pub fn unrecord(&mut self, value: f64, now_ms: i64) {
        self.record(-value, now_ms);
    }

    /// Resets the samples no window of the rate covers any more.
    fn purge_obsolete(&mut self, now_ms: i64) {
        let expire_age = self.num_samples as i64 * self.window_ms;
        for s in &mut self.samples {
            if now_ms - s.start_ms >= expire_age {
                *s = Sample::new(now_ms);
            }
        }
    }

    /// The span the rate divides by, in ms: from the oldest sample's start to now, at least
    /// `num_samples - 1` whole windows, and never zero.
    pub fn window_size_ms(&mut self, now_ms: i64) -> i64 {
        self.purge_obsolete(now_ms);
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now_ms));
            self.current = 0;
        }
        let oldest = self
            .samples
            .iter()
            .map(|s| s.start_ms)
            .min()
            .unwrap_or(now_ms);
        let mut elapsed = now_ms - oldest;
        let full_windows = elapsed / self.window_ms;
        let min_full_windows = self.num_samples as i64 - 1;
        if full_windows < min_full_windows {
            elapsed += (min_full_windows - full_windows) * self.window_ms;
        }
        elapsed.max(1)
    }

    /// The rate per second at `now_ms`.
    pub fn measure(&mut self, now_ms: i64) -> f64 {
        self.purge_obsolete(now_ms);
        let total: f64 = self.samples.iter().map(|s| s.value).sum();
        total / (self.window_size_ms(now_ms) as f64 / 1000.0)
    }
}

/// How long a client over `bound` must wait so that its rate over the measured span comes
/// back to the bound (Kafka's `QuotaUtils.throttleTime`): `(rate - bound) / bound * span`,
/// rounded to the nearest ms. Zero when the rate is within the bound.
pub fn throttle_time_ms(rate: f64, bound: f64, window_size_ms: i64) -> i64 {
    if rate <= bound {
        return 0;
    }
    if bound <= 0.0 {
        // A zero (or negative) quota: every byte is over it; wait the whole span.
        return window_size_ms;
    }
    ((rate - bound) / bound * window_size_ms as f64).round() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_burst_is_spread_over_num_samples_minus_one_windows() {
        let mut r = SampledRate::new(11, 1000);
        r.record(1_000_000.0, 0);
        // 10 windows of 1 s at least: 1 MB over 10 s.
        assert_eq!(r.window_size_ms(0), 10_000);
        assert_eq!(r.measure(0), 100_000.0);
        // 2.5 s later: the 2.5 s elapsed plus the 8 whole windows still missing.
        assert_eq!(r.window_size_ms(2_500), 10_500);
        // Past the minimum, the real span from the oldest sample.
        r.record(0.0, 10_500);
        assert_eq!(r.window_size_ms(10_500), 10_500);
        assert!((r.measure(10_500) - 1_000_000.0 / 10.5).abs() < 1e-6);
    }

    #[test]
    fn samples_roll_over_and_old_ones_expire() {
        let mut r = SampledRate::new(3, 1000);
        r.record(300.0, 0);
        r.record(300.0, 1000);
        r.record(300.0, 2000);
        // Three samples from 0: span 2000 ms (the minimum of 2 windows), 900 bytes.
        assert_eq!(r.measure(2000), 450.0);
        // At 3000 the fourth window reuses the first sample (started at 0).
        r.record(30.0, 3000);
        // Samples at 1000, 2000, 3000: 630 bytes over 2000 ms.
        assert_eq!(r.measure(3000), 315.0);
        // At 6000 every sample is older than 3 windows: all reset, rate zero.
        assert_eq!(r.measure(6000), 0.0);
    }

    #[test]
    fn unrecord_takes_a_value_back() {
        let mut r = SampledRate::new(11, 1000);
        r.record(500.0, 0);
        r.unrecord(200.0, 0);
        assert_eq!(r.measure(0), 30.0);
    }

    #[test]
    fn throttle_time_brings_the_rate_back_to_the_bound() {
        // 2 MB/s measured over 10 s against a 1 MB/s quota: wait another 10 s.
        assert_eq!(throttle_time_ms(2_000_000.0, 1_000_000.0, 10_000), 10_000);
        // 10 % over across 11 s: 1.1 s.
        assert_eq!(throttle_time_ms(1_100_000.0, 1_000_000.0, 11_000), 1_100);
        assert_eq!(throttle_time_ms(999.0, 1000.0, 11_000), 0);
        assert_eq!(throttle_time_ms(1000.0, 1000.0, 11_000), 0);
        assert_eq!(throttle_time_ms(1.0, 0.0, 11_000), 11_000);
    }
}
