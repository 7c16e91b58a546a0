//! A rate limit per address for the class API: a token bucket each (a burst, then a steady
//! rate), so a device that floods the server is answered 429 while the rest of the class goes
//! on. The table of addresses is bounded: when it is full, addresses whose bucket has refilled
//! (idle ones) are forgotten first.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

/// Requests an address may make at once.
pub const BURST: f64 = 120.0;
/// Requests per second an address may keep making.
pub const PER_SECOND: f64 = 2.0;
/// Addresses remembered at most.
const MAX_ADDRESSES: usize = 4096;

#[derive(Default)]
pub struct Limiter {
    buckets: HashMap<IpAddr, (f64, Instant)>,
}

impl Limiter {
    /// Whether `addr` may make a request now (and counts it).
    pub fn allow(&mut self, addr: IpAddr, now: Instant) -> bool {
        if self.buckets.len() >= MAX_ADDRESSES && !self.buckets.contains_key(&addr) {
            self.buckets.retain(|_, (tokens, at)| {
                *tokens + now.saturating_duration_since(*at).as_secs_f64() * PER_SECOND < BURST
            });
            if self.buckets.len() >= MAX_ADDRESSES {
                return false; // every remembered address is busy: a flood from many addresses
            }
        }
        let (tokens, at) = self.buckets.entry(addr).or_insert((BURST, now));
        *tokens =
            (*tokens + now.saturating_duration_since(*at).as_secs_f64() * PER_SECOND).min(BURST);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_burst_then_the_steady_rate() {
        let mut limiter = Limiter::default();
        let (a, b) = (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2]));
        let t0 = Instant::now();
        let allowed = (0..1000).filter(|_| limiter.allow(a, t0)).count();
        assert_eq!(allowed, BURST as usize);
        assert!(limiter.allow(b, t0), "another address is not held up");
        assert!(
            limiter.allow(a, t0 + Duration::from_secs(1)),
            "refilled at the steady rate"
        );
    }
}
