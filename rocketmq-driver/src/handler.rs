//! The user's handler behind one object, so the driver is not generic over it, and without a
//! box per delivery while handlers finish on their first poll.
//!
//! A handler's future used to be boxed to be type-erased before anything else happened to it:
//! one allocation (and one free) per delivery, a third of the push consumer's allocations at
//! 100 B messages. Now the handler's future goes into a box kept from the delivery before
//! (a pinned `Option` the finished future is dropped out of in place), so a handler that
//! finishes on its first poll on the driver's task (see `driver::handlers`) allocates nothing;
//! a future that waits keeps its box, and goes on on a task of its own.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use consumer_core::{ConsumeOutcome, Messages};

use crate::runtime::BoxFuture;

/// The user's handler, as the driver task owns it.
pub(crate) type Handler = Box<dyn Handle + Send>;

/// Boxes `handler` (a push consumer's) as the driver runs it.
pub(crate) fn boxed<F, Fut>(handler: F) -> Handler
where
    F: Fn(Messages) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ConsumeOutcome> + Send + 'static,
{
    Box::new(Reusing {
        handler,
        spare: None,
    })
}

/// Runs a handler on a delivery's messages.
pub(crate) trait Handle {
    /// Makes the handler's future for `messages` and, with `first_poll`, polls it once in
    /// that context. A handler that panics, making its future or in that poll, is done with
    /// [`ConsumeOutcome::ReconsumeLater`], so its messages come again.
    fn start(&mut self, messages: Messages, first_poll: Option<&mut Context<'_>>) -> Started;
}

/// Where a delivery's handler stands after [`Handle::start`].
pub(crate) enum Started {
    /// It finished (or panicked).
    Done(ConsumeOutcome),
    /// It was not polled, or waits: the rest runs on a task of its own.
    Running(BoxFuture<ConsumeOutcome>),
}

/// A handler and the box its next future goes into.
struct Reusing<F, Fut> {
    handler: F,
    /// The box of a future that finished on its first poll, empty, for the next one.
    spare: Option<Pin<Box<Option<Fut>>>>,
}

impl<F, Fut> Handle for Reusing<F, Fut>
where
    F: Fn(Messages) -> Fut,
    Fut: Future<Output = ConsumeOutcome> + Send + 'static,
{
    fn start(&mut self, messages: Messages, first_poll: Option<&mut Context<'_>>) -> Started {
        let made = std::panic::catch_unwind(AssertUnwindSafe(|| (self.handler)(messages)));
        let Ok(future) = made else {
            return Started::Done(ConsumeOutcome::ReconsumeLater);
        };
        let Some(cx) = first_poll else {
            return Started::Running(Box::pin(future));
        };
        let mut slot = self.spare.take().unwrap_or_else(|| Box::pin(None));
        slot.as_mut().set(Some(future));
        let polled =
            std::panic::catch_unwind(AssertUnwindSafe(|| match slot.as_mut().as_pin_mut() {
                Some(future) => future.poll(cx),
                None => Poll::Ready(ConsumeOutcome::ReconsumeLater),
            }));
        match polled {
            Ok(Poll::Ready(outcome)) => {
                // Dropped in place: the box stays for the next delivery's future.
                slot.as_mut().set(None);
                self.spare = Some(slot);
                Started::Done(outcome)
            }
            // Its state is whatever the panic left: the box goes with it.
            Err(_) => Started::Done(ConsumeOutcome::ReconsumeLater),
            Ok(Poll::Pending) => Started::Running(Box::pin(Rest(slot))),
        }
    }
}

/// A future that waited on its first poll, in the box it was polled in.
struct Rest<Fut>(Pin<Box<Option<Fut>>>);

impl<Fut: Future<Output = ConsumeOutcome>> Future for Rest<Fut> {
    type Output = ConsumeOutcome;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ConsumeOutcome> {
        match self.get_mut().0.as_mut().as_pin_mut() {
            Some(future) => future.poll(cx),
            // `start` hands out only a slot holding a future.
            None => Poll::Ready(ConsumeOutcome::ReconsumeLater),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use futures_channel::oneshot;
    use futures_util::FutureExt;
    use futures_util::task::noop_waker_ref;

    use super::*;

    fn first_poll(handle: &mut dyn Handle) -> Started {
        let mut cx = Context::from_waker(noop_waker_ref());
        handle.start(Messages::default(), Some(&mut cx))
    }

    fn spare_at<F, Fut>(reusing: &Reusing<F, Fut>) -> Option<*const Option<Fut>> {
        reusing.spare.as_ref().map(|slot| &**slot as *const _)
    }

    #[test]
    fn a_future_done_on_its_first_poll_leaves_its_box_for_the_next() {
        let mut reusing = Reusing {
            handler: |_: Messages| async { ConsumeOutcome::Success },
            spare: None,
        };
        assert!(matches!(
            first_poll(&mut reusing),
            Started::Done(ConsumeOutcome::Success)
        ));
        let kept = spare_at(&reusing).expect("the box is kept");
        assert!(matches!(
            first_poll(&mut reusing),
            Started::Done(ConsumeOutcome::Success)
        ));
        assert_eq!(spare_at(&reusing), Some(kept), "the same box again");
    }

    #[test]
    fn a_future_that_waits_goes_on_in_its_box() {
        let senders: Arc<Mutex<Vec<oneshot::Sender<ConsumeOutcome>>>> = Arc::default();
        let mut reusing = Reusing {
            handler: {
                let senders = Arc::clone(&senders);
                move |_: Messages| {
                    let (tx, rx) = oneshot::channel();
                    senders.lock().expect("not poisoned").push(tx);
                    async move { rx.await.unwrap_or(ConsumeOutcome::ReconsumeLater) }
                }
            },
            spare: None,
        };
        let Started::Running(rest) = first_poll(&mut reusing) else {
            panic!("the handler waits");
        };
        assert!(reusing.spare.is_none(), "the box went with the future");
        let tx = senders.lock().expect("not poisoned").pop().expect("made");
        assert!(tx.send(ConsumeOutcome::Success).is_ok());
        assert_eq!(rest.now_or_never(), Some(ConsumeOutcome::Success));
        // Not polled here: boxed as it is, and it runs to its end on its own.
        let Started::Running(unpolled) = reusing.start(Messages::default(), None) else {
            panic!("not polled, so running");
        };
        let tx = senders.lock().expect("not poisoned").pop().expect("made");
        assert!(tx.send(ConsumeOutcome::ReconsumeLater).is_ok());
        assert_eq!(
            unpolled.now_or_never(),
            Some(ConsumeOutcome::ReconsumeLater)
        );
    }

    #[test]
    fn a_handler_that_panics_is_reconsumed_later() {
        let mut making = Reusing {
            handler: |_: Messages| -> std::future::Ready<ConsumeOutcome> {
                panic!("making the future")
            },
            spare: None,
        };
        assert!(matches!(
            first_poll(&mut making),
            Started::Done(ConsumeOutcome::ReconsumeLater)
        ));
        let mut polling = Reusing {
            handler: |_: Messages| async {
                panic!("on the first poll");
                #[allow(unreachable_code)]
                ConsumeOutcome::Success
            },
            spare: None,
        };
        assert!(matches!(
            first_poll(&mut polling),
            Started::Done(ConsumeOutcome::ReconsumeLater)
        ));
        assert!(
            polling.spare.is_none(),
            "a box a panic left is not used again"
        );
    }
}
