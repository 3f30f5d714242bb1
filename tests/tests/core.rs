//! The consumer core against the simulated cluster (`rocketmq_tests::world`), one scenario per
//! module, all in one test binary: each module's doc says what it pins. No broker needed.

#[path = "core/access_denied_until_credentials_fixed.rs"]
mod access_denied_until_credentials_fixed;
#[path = "core/ack_commit_follows_acknowledgements.rs"]
mod ack_commit_follows_acknowledgements;
#[path = "core/black_holed_connection_probed.rs"]
mod black_holed_connection_probed;
#[path = "core/broadcast_gives_up.rs"]
mod broadcast_gives_up;
#[path = "core/broadcast_local_offsets.rs"]
mod broadcast_local_offsets;
#[path = "core/broker_requests.rs"]
mod broker_requests;
#[path = "core/commits_one_at_a_time_per_broker.rs"]
mod commits_one_at_a_time_per_broker;
#[path = "core/consume_timeout.rs"]
mod consume_timeout;
#[path = "core/consumer_wide_limit_resumes_at_room.rs"]
mod consumer_wide_limit_resumes_at_room;
#[path = "core/crashed_broker_offsets_restored.rs"]
mod crashed_broker_offsets_restored;
#[path = "core/deliveries_on_demand.rs"]
mod deliveries_on_demand;
#[path = "core/final_commits_survive_a_lost_connection.rs"]
mod final_commits_survive_a_lost_connection;
#[path = "core/flow_control_pauses_pull.rs"]
mod flow_control_pauses_pull;
#[path = "core/handover_alone_after_a_crash.rs"]
mod handover_alone_after_a_crash;
#[path = "core/handover_clock_starts_at_an_answer.rs"]
mod handover_clock_starts_at_an_answer;
#[path = "core/handover_commit_survives_a_lost_connection.rs"]
mod handover_commit_survives_a_lost_connection;
#[path = "core/handover_timed_out_asks_again.rs"]
mod handover_timed_out_asks_again;
#[path = "core/handover_waits_for_the_old_owner.rs"]
mod handover_waits_for_the_old_owner;
#[path = "core/late_complete_after_revoke.rs"]
mod late_complete_after_revoke;
#[path = "core/message_trace_records.rs"]
mod message_trace_records;
#[path = "core/name_server_failover.rs"]
mod name_server_failover;
#[path = "core/namespace_wraps_names.rs"]
mod namespace_wraps_names;
#[path = "core/offset_moved_resets_queue.rs"]
mod offset_moved_resets_queue;
#[path = "core/orderly_dead_letter.rs"]
mod orderly_dead_letter;
#[path = "core/orderly_hand_over_waits_for_the_commit.rs"]
mod orderly_hand_over_waits_for_the_commit;
#[path = "core/orderly_lease_lost.rs"]
mod orderly_lease_lost;
#[path = "core/orderly_locks_on_assign.rs"]
mod orderly_locks_on_assign;
#[path = "core/orderly_queues_take_turns.rs"]
mod orderly_queues_take_turns;
#[path = "core/orderly_revoke_unlocks.rs"]
mod orderly_revoke_unlocks;
#[path = "core/orderly_suspend_redelivers_batch.rs"]
mod orderly_suspend_redelivers_batch;
#[path = "core/orderly_waits_for_the_master.rs"]
mod orderly_waits_for_the_master;
#[path = "core/poll_mode_assign.rs"]
mod poll_mode_assign;
#[path = "core/poll_mode_flow_control.rs"]
mod poll_mode_flow_control;
#[path = "core/poll_mode_manual_commit.rs"]
mod poll_mode_manual_commit;
#[path = "core/poll_mode_offset_for_timestamp.rs"]
mod poll_mode_offset_for_timestamp;
#[path = "core/poll_mode_seek_pause.rs"]
mod poll_mode_seek_pause;
#[path = "core/poll_mode_takes_messages.rs"]
mod poll_mode_takes_messages;
#[path = "core/poll_mode_unread.rs"]
mod poll_mode_unread;
#[path = "core/pop_every_message_consumed.rs"]
mod pop_every_message_consumed;
#[path = "core/pop_failure_returns_raised.rs"]
mod pop_failure_returns_raised;
#[path = "core/pop_killed_member_returns.rs"]
mod pop_killed_member_returns;
#[path = "core/pop_renewal_keeps_slow_handler.rs"]
mod pop_renewal_keeps_slow_handler;
#[path = "core/pop_seeded_fault_schedules.rs"]
mod pop_seeded_fault_schedules;
#[path = "core/pop_shutdown_releases.rs"]
mod pop_shutdown_releases;
#[path = "core/pop_support.rs"]
mod pop_support;
#[path = "core/pop_survives_faults.rs"]
mod pop_survives_faults;
#[path = "core/push_pause_resume.rs"]
mod push_pause_resume;
#[path = "core/push_seek.rs"]
mod push_seek;
#[path = "core/rate_limit_holds.rs"]
mod rate_limit_holds;
#[path = "core/rebalance_member_joins.rs"]
mod rebalance_member_joins;
#[path = "core/reset_offset_command.rs"]
mod reset_offset_command;
#[path = "core/revoke_hook_waits.rs"]
mod revoke_hook_waits;
#[path = "core/send_back_fallback.rs"]
mod send_back_fallback;
#[path = "core/send_back_retry_topic.rs"]
mod send_back_retry_topic;
#[path = "core/shutdown_commits_offsets.rs"]
mod shutdown_commits_offsets;
#[path = "core/silent_broker_connection_replaced.rs"]
mod silent_broker_connection_replaced;
#[path = "core/silent_departure_moves_queues_in_step.rs"]
mod silent_departure_moves_queues_in_step;
#[path = "core/slave_behind_the_consumer.rs"]
mod slave_behind_the_consumer;
#[path = "core/slave_reads_a_backlog.rs"]
mod slave_reads_a_backlog;
#[path = "core/slave_serves_while_master_down.rs"]
mod slave_serves_while_master_down;
#[path = "core/sql92_subscription_rejected.rs"]
mod sql92_subscription_rejected;
#[path = "core/stale_pull_response_dropped.rs"]
mod stale_pull_response_dropped;
#[path = "core/start_offset_table.rs"]
mod start_offset_table;
#[path = "core/stats_snapshot.rs"]
mod stats_snapshot;
#[path = "core/subscribe_while_running.rs"]
mod subscribe_while_running;
#[path = "core/topic_disappears.rs"]
mod topic_disappears;
#[path = "core/unregister_after_final_commits.rs"]
mod unregister_after_final_commits;
