//! One send's whole policy, as a state machine ([`SendPlan`]): the route lookups (each name
//! server in turn, the auto-create fallback, a stale route kept when none answers), the target
//! of each attempt (avoiding the broker that just failed), retries and the send timeout. The
//! driver only carries out its [`Step`]s and feeds the answers back
//! (`DefaultMQProducerImpl.sendDefaultImpl` and `tryToFindTopicPublishInfo`).
//!
//! Where Java fails a send at once when the name servers know no route for its topic, a plan
//! asks them again (every `route_retry_interval`, shared by every send of the topic through
//! [`Routes::next_lookup`]) until its send timeout: a broker that restarts drops out of the
//! name servers' routes when it goes and is back in them seconds after it starts, and a send
//! with a send timeout longer than that is stored instead of failing.

use std::time::Instant;

use proto::Command;

use crate::signer::Signer;

use super::{
    Attempts, DEFAULT_TOPIC, Prepared, ProducerConfig, Retry, Routes, SendError, SendResult,
    Target, default_route_from_response, route_from_response, route_request,
};

/// What the driver does next for a send.
#[derive(Debug)]
pub enum Step {
    /// Ask name server `addr` for a route with `command`, then give the answer to
    /// [`SendPlan::handle_answer`]. Route lookups may be serialized per producer, so a burst
    /// of sends to a new topic asks once: a driver that waited for another lookup calls
    /// [`SendPlan::next_step`] again first, which finds the route that lookup fetched.
    LookUp {
        /// The name server.
        addr: String,
        /// `GET_ROUTEINFO_BY_TOPIC`.
        command: Command,
    },
    /// Send `command` to broker `addr`, then give the answer to [`SendPlan::handle_answer`].
    Send {
        /// The broker.
        addr: String,
        /// `SEND_MESSAGE_V2` or `SEND_BATCH_MESSAGE`.
        command: Command,
    },
    /// Nothing to do before `until` (the topic has no usable route and is looked up again
    /// then): call [`SendPlan::next_step`] again at that time.
    Wait {
        /// When to ask again.
        until: Instant,
    },
    /// The send is over.
    Done(Result<SendResult, SendError>),
}

/// Where a send stands.
#[derive(Debug)]
enum Stage {
    /// Next: fetch the route if the cache says so, else choose a target and send.
    Start,
    /// Asking name server number `.0` for the topic's route.
    Route(usize),
    /// Asking name server number `.0` for `DEFAULT_TOPIC`'s route (the topic has none yet).
    DefaultRoute(usize),
    /// An attempt in flight to `.0`.
    Sending(Target),
    /// Waiting until `.0` (before the deadline) to look the route up again.
    Waiting(Instant),
    /// Over, with this result (taken by the next `next_step`).
    Done(Option<Result<SendResult, SendError>>),
}

/// One send of a [`Prepared`] message, from its first route lookup to its result.
#[derive(Debug)]
pub struct SendPlan {
    prepared: Prepared,
    name_servers: Vec<String>,
    deadline: Instant,
    attempts: Attempts,
    /// The broker of the last failed attempt: round robin avoids it.
    failed_broker: Option<String>,
    /// No name server answered: this attempt goes by the route fetched before.
    use_cached: bool,
    /// The last name server failure, reported if no route can be had at all.
    lookup_error: Option<SendError>,
    /// How long one request may wait for its answer (within the deadline).
    request_timeout: std::time::Duration,
    /// Attempts made again after a failure ([`SendResult::retries`]).
    retried: u32,
    stage: Stage,
    signer: Signer,
}

impl SendPlan {
    /// A send of `prepared` starting at `now`, to be over by `now + config.send_timeout`.
    pub fn new(config: &ProducerConfig, prepared: Prepared, now: Instant) -> Self {
        Self {
            prepared,
            name_servers: config.name_servers.clone(),
            deadline: now + config.send_timeout,
            attempts: Attempts::new(config),
            failed_broker: None,
            use_cached: false,
            lookup_error: None,
            request_timeout: config.request_timeout,
            retried: 0,
            stage: Stage::Start,
            signer: Signer::new(config.credentials.clone(), config.signature_algorithm),
        }
    }

    /// Signs this send's requests with `signer` instead of the configuration's credentials
    /// (a producer whose credentials were rotated since it was built).
    #[must_use]
    pub(crate) fn signed_with(mut self, signer: Signer) -> Self {
        self.signer = signer;
        self
    }

    /// When the send gives up: every request of it is bounded by this.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// When a request sent at `now` stops waiting for its answer: after the request timeout,
    /// and never after the send's deadline.
    pub fn request_deadline(&self, now: Instant) -> Instant {
        (now + self.request_timeout).min(self.deadline)
    }

    /// The message being sent.
    pub fn prepared(&self) -> &Prepared {
        &self.prepared
    }

    /// What to do next, given the route cache at `now`. Requests come signed when there are
    /// credentials.
    pub fn next_step(&mut self, routes: &mut Routes, now: Instant) -> Step {
        let mut step = self.unsigned_step(routes, now);
        if let Step::LookUp { command, .. } | Step::Send { command, .. } = &mut step {
            self.signer.sign(command);
        }
        step
    }

    fn unsigned_step(&mut self, routes: &mut Routes, now: Instant) -> Step {
        let topic = self.prepared.topic().to_owned();
        loop {
            match &mut self.stage {
                Stage::Done(result) => {
                    return Step::Done(result.take().unwrap_or(Err(SendError::Closed)));
                }
                Stage::Sending(target) => {
                    // Asked again before the answer: the same request stands.
                    return Step::Send {
                        addr: target.addr.clone(),
                        command: self.prepared.request(target),
                    };
                }
                Stage::Waiting(until) if *until > now => return Step::Wait { until: *until },
                Stage::Waiting(..) => self.stage = Stage::Start,
                Stage::Route(_) | Stage::DefaultRoute(_) if !routes.needs_fetch(&topic, now) => {
                    // Another send fetched it meanwhile.
                    self.stage = Stage::Start;
                }
                Stage::Route(index) => {
                    let Some(addr) = self.name_servers.get(*index) else {
                        self.no_name_server_answered(routes, &topic);
                        continue;
                    };
                    return Step::LookUp {
                        addr: addr.clone(),
                        command: route_request(&topic),
                    };
                }
                Stage::DefaultRoute(index) => {
                    let addr = self.name_servers.get(*index).cloned().unwrap_or_default();
                    return Step::LookUp {
                        addr,
                        command: route_request(DEFAULT_TOPIC),
                    };
                }
                Stage::Start => {
                    if !self.use_cached && routes.needs_fetch(&topic, now) {
                        self.stage = match routes.next_lookup(&topic, now) {
                            // Asked a moment ago, and nothing usable: wait for the next lookup.
                            Some(at) => self.wait_or_fail(at, no_route(&topic)),
                            None => Stage::Route(0),
                        };
                        continue;
                    }
                    self.use_cached = false;
                    self.stage = match routes.choose(&self.prepared, self.failed_broker.as_deref())
                    {
                        Ok(target) => Stage::Sending(target),
                        // A route without a writable queue: asked again after the interval.
                        Err(error) => self.wait_for_lookup(routes, &topic, now, error),
                    }
                }
            }
        }
    }

    /// The answer to the last [`Step::LookUp`] or [`Step::Send`], or why there is none (the
    /// driver's timeout at [`SendPlan::deadline`], a lost connection).
    pub fn handle_answer(
        &mut self,
        routes: &mut Routes,
        now: Instant,
        answer: Result<Command, SendError>,
    ) {
        let topic = self.prepared.topic().to_owned();
        match std::mem::replace(&mut self.stage, Stage::Start) {
            Stage::Route(index) => {
                match answer.and_then(|response| route_from_response(&topic, &response)) {
                    Ok(route) => routes.insert(&topic, route, now),
                    // No broker has the topic yet: send where the broker will create it.
                    Err(SendError::NoRoute { .. }) => self.stage = Stage::DefaultRoute(index),
                    Err(error) => {
                        self.lookup_error = Some(error);
                        self.stage = Stage::Route(index + 1);
                    }
                }
            }
            Stage::DefaultRoute(_) => {
                // Kept for the route's time to live, after which the topic's own route is
                // asked for again (Java's producer does the same).
                match answer.and_then(|response| default_route_from_response(&topic, &response)) {
                    Ok(route) => routes.insert(&topic, route, now),
                    // No broker has the topic or the default one (a restarting broker left
                    // the routes): ask again shortly, while the send has time.
                    Err(error @ SendError::NoRoute { .. }) => {
                        routes.no_route(&topic, now);
                        self.stage = self.wait_for_lookup(routes, &topic, now, error);
                    }
                    Err(error) => self.stage = Stage::Done(Some(Err(error))),
                }
            }
            Stage::Sending(target) => {
                let outcome =
                    answer.and_then(|response| self.prepared.interpret(&target, &response));
                self.stage = match outcome {
                    Ok(result) => Stage::Done(Some(Ok(SendResult {
                        retries: self.retried,
                        ..result
                    }))),
                    Err(error) => self.after_failure(routes, now, &target, error, false),
                };
            }
            // Nothing was asked: an answer now is not this send's.
            stage @ (Stage::Start | Stage::Waiting(..) | Stage::Done(_)) => self.stage = stage,
        }
    }

    /// The attempt in flight never left: its connection could not be opened (refused, or not
    /// open within the connect timeout), so the broker cannot have stored it. It is tried
    /// again, on a fresh route, without using up one of the send's retries, while the send has
    /// time; a lookup in flight fails as [`SendPlan::handle_answer`] would fail it.
    pub fn handle_unsent(&mut self, routes: &mut Routes, now: Instant, error: SendError) {
        match std::mem::replace(&mut self.stage, Stage::Start) {
            Stage::Sending(target) => {
                self.stage = self.after_failure(routes, now, &target, error, true);
            }
            stage => {
                self.stage = stage;
                self.handle_answer(routes, now, Err(error));
            }
        }
    }

    /// Waits for the next lookup of `topic` the route cache allows (at once when it allows one
    /// now), or ends the send with `error` if that comes after its deadline.
    fn wait_for_lookup(
        &self,
        routes: &Routes,
        topic: &str,
        now: Instant,
        error: SendError,
    ) -> Stage {
        self.wait_or_fail(routes.next_lookup(topic, now).unwrap_or(now), error)
    }

    /// Waits until `at` if the send's deadline comes later, else ends the send with `error`.
    fn wait_or_fail(&self, at: Instant, error: SendError) -> Stage {
        if at < self.deadline {
            Stage::Waiting(at)
        } else {
            Stage::Done(Some(Err(error)))
        }
    }

    /// What follows a failed attempt: another (on a fresh route if the failure says the route
    /// moved), unless the failure is final, no attempt is left, or time is up.
    /// An attempt that `unsent` never left does not use up a retry (see
    /// [`SendPlan::handle_unsent`]). A failure that says the route moved has it fetched again
    /// by the next send, whether or not this one tries again.
    fn after_failure(
        &mut self,
        routes: &mut Routes,
        now: Instant,
        target: &Target,
        error: SendError,
        unsent: bool,
    ) -> Stage {
        let Retry::Yes { refresh_route } = Attempts::classify(&error) else {
            return Stage::Done(Some(Err(error)));
        };
        if refresh_route {
            routes.invalidate(self.prepared.topic());
        }
        if now >= self.deadline || !(unsent || self.attempts.take()) {
            return Stage::Done(Some(Err(error)));
        }
        self.failed_broker = Some(target.queue.broker_name().to_owned());
        self.retried += 1;
        Stage::Start
    }

    /// Every name server failed: a route fetched before is used on (Java keeps its publish
    /// info too); without one, the send fails with the last name server's failure.
    fn no_name_server_answered(&mut self, routes: &Routes, topic: &str) {
        if routes.get(topic).is_some() {
            self.use_cached = true;
            self.stage = Stage::Start;
        } else {
            let error = self.lookup_error.take().unwrap_or_else(|| no_route(topic));
            self.stage = Stage::Done(Some(Err(error)));
        }
    }
}

fn no_route(topic: &str) -> SendError {
    SendError::NoRoute {
        topic: topic.to_owned(),
    }
}
