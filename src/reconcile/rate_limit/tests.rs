use std::time::Duration;

use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn exponential_backoff_doubles_from_its_base_up_to_its_cap() {
    let backoff = ItemExponentialBackoff::new(ms(5), Duration::from_secs(1000));
    let delays: Vec<Duration> = (0..20).map(|_| backoff.when(&"a")).collect();
    let expected: Vec<Duration> = (0..20)
        .map(|n| (ms(5) * 2u32.pow(n)).min(Duration::from_secs(1000)))
        .collect();
    assert_eq!(delays, expected);
    assert_eq!(delays[..4], [ms(5), ms(10), ms(20), ms(40)]);
    // 5 ms * 2^18 = 1310.72 s: the cap from there on.
    assert_eq!(delays[17], Duration::from_micros(655_360_000));
    assert_eq!(delays[18], Duration::from_secs(1000));
    assert_eq!(backoff.retries(&"a"), 20);
}

#[test]
fn exponential_backoff_stays_at_its_cap_however_many_failures() {
    let backoff = ItemExponentialBackoff::new(ms(5), Duration::from_secs(1000));
    for _ in 0..2000 {
        backoff.when(&"a");
    }
    assert_eq!(backoff.when(&"a"), Duration::from_secs(1000));
    let none = ItemExponentialBackoff::new(Duration::ZERO, Duration::from_secs(1));
    for _ in 0..2000 {
        assert_eq!(none.when(&"a"), Duration::ZERO);
    }
}

#[test]
fn exponential_backoff_counts_each_key_apart_and_forget_starts_it_over() {
    let backoff = ItemExponentialBackoff::new(ms(5), Duration::from_secs(1000));
    backoff.when(&"a");
    backoff.when(&"a");
    assert_eq!(backoff.when(&"b"), ms(5));
    assert_eq!(backoff.when(&"a"), ms(20));
    assert_eq!((backoff.retries(&"a"), backoff.retries(&"b")), (3, 1));
    backoff.forget(&"a");
    assert_eq!(backoff.retries(&"a"), 0);
    assert_eq!(backoff.when(&"a"), ms(5));
    assert_eq!(backoff.when(&"b"), ms(10));
    assert_eq!(backoff.retries(&"never failed"), 0);
}

#[tokio::test(start_paused = true)]
async fn a_token_bucket_lets_its_burst_through_then_spaces_at_its_rate() {
    let bucket = TokenBucket::new(10.0, 3);
    let at_once: Vec<Duration> = (0..6).map(|i| bucket.when(&i)).collect();
    // Three tokens, then each retry reserves the next one: 100 ms apart.
    assert_eq!(
        at_once,
        [0, 0, 0, 100, 200, 300].map(ms),
        "burst then qps spacing"
    );
    // 1 s later the bucket refilled by 10, less the 3 reserved ahead: full.
    tokio::time::advance(Duration::from_secs(1)).await;
    let later: Vec<Duration> = (0..4).map(|i| bucket.when(&i)).collect();
    assert_eq!(later, [0, 0, 0, 100].map(ms));
    // 50 ms later half a token came back: the next one is 50 ms away
    // after the one already reserved.
    tokio::time::advance(ms(50)).await;
    assert_eq!(bucket.when(&0), ms(150));
    assert_eq!(RateLimiter::<i32>::retries(&bucket, &0), 0);
}

#[tokio::test(start_paused = true)]
async fn a_token_bucket_is_the_same_for_every_key_and_forgets_nothing() {
    let bucket = TokenBucket::new(2.0, 1);
    assert_eq!(bucket.when(&"a"), Duration::ZERO);
    assert_eq!(bucket.when(&"b"), ms(500));
    bucket.forget(&"a");
    assert_eq!(bucket.when(&"a"), ms(1000));
    let unlimited = TokenBucket::new(0.0, 0);
    assert!((0..1000).all(|i| unlimited.when(&i).is_zero()));
}

#[tokio::test(start_paused = true)]
async fn max_of_answers_the_longest_delay_and_the_most_retries() {
    let limiter: MaxOf<&str> = MaxOf::new(vec![
        Box::new(ItemExponentialBackoff::new(ms(5), ms(1000))),
        Box::new(ItemExponentialBackoff::new(ms(1), ms(100_000))),
        Box::new(TokenBucket::new(1.0, 2)),
    ]);
    // backoff (5 ms | 1 ms), bucket (0 | 0 | 1 s | 2 s | ...)
    assert_eq!(limiter.when(&"a"), ms(5));
    assert_eq!(limiter.when(&"a"), ms(10));
    assert_eq!(limiter.when(&"b"), ms(1000), "the bucket is empty");
    for _ in 0..7 {
        limiter.when(&"a");
    }
    // a failed 9 times: 5 ms * 2^9 capped at 1 s, 1 ms * 2^9 = 512 ms,
    // the bucket 9 s ahead.
    tokio::time::advance(Duration::from_secs(100)).await;
    assert_eq!(limiter.when(&"a"), ms(1000), "capped 5 ms backoff");
    assert_eq!(limiter.when(&"a"), ms(1024), "1 ms backoff, uncapped");
    assert_eq!(limiter.retries(&"a"), 11);
    limiter.forget(&"a");
    assert_eq!(limiter.retries(&"a"), 0);
    tokio::time::advance(Duration::from_secs(100)).await;
    assert_eq!(limiter.when(&"a"), ms(5));
    let none: MaxOf<&str> = MaxOf::new(Vec::new());
    assert_eq!((none.when(&"a"), none.retries(&"a")), (Duration::ZERO, 0));
}

#[tokio::test(start_paused = true)]
async fn the_default_controller_limiter_has_client_gos_numbers() {
    assert_eq!(DEFAULT_BASE_DELAY, ms(5));
    assert_eq!(DEFAULT_MAX_DELAY, Duration::from_secs(1000));
    assert_eq!((DEFAULT_QPS, DEFAULT_BURST), (10.0, 100));
    let limiter = default_controller::<u32>();
    // One key: its backoff, 5 ms doubling.
    assert_eq!(
        (0..4).map(|_| limiter.when(&0)).collect::<Vec<_>>(),
        [5, 10, 20, 40].map(ms)
    );
    // 100 failures at once (4 above, 96 here) fit in the burst: each key's
    // first backoff, 5 ms.
    for key in 1..=96 {
        assert_eq!(limiter.when(&key), ms(5), "key {key}");
    }
    // Beyond the burst, the bucket's 10 a second: 100 ms, 200 ms, ...
    assert_eq!(limiter.when(&1000), ms(100));
    assert_eq!(limiter.when(&1001), ms(200));
    assert_eq!(limiter.retries(&0), 4);
    // The cap: a key failing for ever waits 1000 s.
    tokio::time::advance(Duration::from_secs(3600)).await;
    for _ in 0..30 {
        limiter.when(&7);
    }
    assert_eq!(limiter.when(&7), Duration::from_secs(1000));
}

#[test]
fn limiters_behind_a_box_or_an_arc_are_limiters() {
    let shared = Arc::new(ItemExponentialBackoff::new(ms(1), ms(8)));
    let boxed: Box<dyn RateLimiter<&str>> = Box::new(Arc::clone(&shared));
    assert_eq!(boxed.when(&"a"), ms(1));
    assert_eq!(shared.when(&"a"), ms(2), "the same failures");
    assert_eq!(boxed.retries(&"a"), 2);
    boxed.forget(&"a");
    assert_eq!(shared.retries(&"a"), 0);
}
