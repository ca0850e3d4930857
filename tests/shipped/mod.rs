//! The shipped scenarios, one test name each, for the test files that run every one of them
//! (`scenarios.rs` headless, `scenarios_live.rs` as presented): `shipped!(my_tests)` calls
//! `my_tests! { leader_crash => "leader-crash", ... }`. Each of those files also checks that
//! the list covers `scenario::SHIPPED`, so a new scenario cannot be left out.

macro_rules! shipped {
    ($tests:ident) => {
        $tests! {
            leader_crash => "leader-crash",
            second_crash => "second-crash",
            unclean_election => "unclean-election",
            slow_follower => "slow-follower",
            controlled_shutdown => "controlled-shutdown",
            preferred_leader => "preferred-leader",
            balanced_election => "balanced-election",
            group_rebalance => "group-rebalance",
            consumer_lag => "consumer-lag",
            keyed_order => "keyed-order",
            coordinator_failover => "coordinator-failover",
            diverged_follower => "diverged-follower",
            leader_isolated => "leader-isolated",
            controller_failover => "controller-failover",
        }
    };
}
