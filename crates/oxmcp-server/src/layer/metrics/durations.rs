//! [`Durations`]: the duration histogram of one series, counted in atomics. An observation
//! is two relaxed additions, with no lock (`prometheus_client`'s `Histogram` takes a mutex
//! for each), and the count is the buckets' total, read at scrape time.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

use super::BUCKETS;

/// [`BUCKETS`]' bounds in nanoseconds.
const BOUNDS_NS: [u64; BUCKETS.len()] = bounds_ns();

const fn bounds_ns() -> [u64; BUCKETS.len()] {
    let mut out = [0; BUCKETS.len()];
    let mut i = 0;
    while i < BUCKETS.len() {
        out[i] = (BUCKETS[i] * 1e9 + 0.5) as u64;
        i += 1;
    }
    out
}

/// The observations of a series: their total in nanoseconds, and how many fell in each
/// bucket (the last one past every bound). Aligned to a cache line, so that the sum and the
/// first buckets, where fast requests land, share one.
#[derive(Debug, Default)]
#[repr(C, align(64))]
struct Counts {
    sum_ns: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len() + 1],
}

/// A duration histogram with [`BUCKETS`]' bounds. Cheap to clone; the clones share it.
#[derive(Debug, Clone, Default)]
pub(super) struct Durations(Arc<Counts>);

impl Durations {
    /// Counts one duration of `ns` nanoseconds.
    pub(super) fn observe(&self, ns: u64) {
        // Most requests end within the first bound, so a scan from the front beats a
        // binary search.
        let bucket = BOUNDS_NS
            .iter()
            .position(|&bound| ns <= bound)
            .unwrap_or(BUCKETS.len());
        self.0.buckets[bucket].fetch_add(1, Relaxed);
        let before = self.0.sum_ns.fetch_add(ns, Relaxed);
        if before.checked_add(ns).is_none() {
            // Past 2^64 ns (584 years of summed time, which long streams can reach): the sum
            // stays at its most rather than wrapping to a small one, which Prometheus would
            // read as a reset.
            self.0.sum_ns.store(u64::MAX, Relaxed);
        }
    }

    /// The number of observations, the sum in seconds, and each bucket's upper bound with
    /// its own (not cumulative) count.
    fn snapshot(&self) -> (u64, f64, [(f64, u64); BUCKETS.len() + 1]) {
        let mut buckets = [(f64::INFINITY, 0); BUCKETS.len() + 1];
        let mut count = 0;
        for (i, (bound, n)) in buckets.iter_mut().enumerate() {
            *n = self.0.buckets[i].load(Relaxed);
            count += *n;
            if let Some(b) = BUCKETS.get(i) {
                *bound = *b;
            }
        }
        // Exact to the nanosecond up to 2^53 ns (104 days) of summed time.
        let sum = self.0.sum_ns.load(Relaxed) as f64 / 1e9;
        (count, sum, buckets)
    }
}

impl TypedMetric for Durations {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Durations {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        let (count, sum, buckets) = self.snapshot();
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_the_buckets_in_nanoseconds() {
        assert_eq!(BOUNDS_NS[0], 500_000);
        assert_eq!(BOUNDS_NS[4], 10_000_000);
        assert_eq!(BOUNDS_NS[BUCKETS.len() - 1], 300_000_000_000);
        assert!(BOUNDS_NS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn each_duration_lands_in_the_first_bucket_that_holds_it() {
        let d = Durations::default();
        for ns in [0, 500_000, 500_001, 999_999_999_999] {
            d.observe(ns);
        }
        let (count, sum, buckets) = d.snapshot();
        assert_eq!(count, 4);
        assert!((sum - 1_000.001).abs() < 1e-9, "{sum}");
        assert_eq!(buckets[0], (0.0005, 2), "a bound holds itself (le)");
        assert_eq!(buckets[1], (0.001, 1));
        assert_eq!(buckets[BUCKETS.len()], (f64::INFINITY, 1));
        assert_eq!(buckets.iter().map(|b| b.1).sum::<u64>(), 4);
    }

    #[test]
    fn the_sum_stops_at_its_most_instead_of_wrapping() {
        let d = Durations::default();
        d.observe(u64::MAX - 10);
        d.observe(100);
        d.observe(5);
        let (count, sum, _) = d.snapshot();
        assert_eq!(count, 3);
        assert_eq!(sum, u64::MAX as f64 / 1e9);
    }
}
