//! An answer a read-only screen asked its source for (configs, ACLs, transactions): nothing
//! until it arrives; the answer shown stays until a newer one replaces it.

use tokio::sync::oneshot::{self, error::TryRecvError};

#[derive(Debug)]
pub struct Awaited<T> {
    answer: Option<Result<T, String>>,
    pending: Option<oneshot::Receiver<Result<T, String>>>,
}

impl<T> Default for Awaited<T> {
    fn default() -> Self {
        Awaited {
            answer: None,
            pending: None,
        }
    }
}

impl<T> Awaited<T> {
    /// Waits for this answer (replacing one asked for before); true when it was already there.
    pub fn attach(&mut self, answer: oneshot::Receiver<Result<T, String>>) -> bool {
        self.pending = Some(answer);
        self.poll()
    }

    /// Takes the answer if it arrived; true when it did. A source that stopped without
    /// answering is an answer too: an error that says so.
    pub fn poll(&mut self) -> bool {
        let Some(pending) = &mut self.pending else {
            return false;
        };
        let answer = match pending.try_recv() {
            Ok(answer) => answer,
            Err(TryRecvError::Empty) => return false,
            Err(TryRecvError::Closed) => Err("the source stopped before answering".to_string()),
        };
        self.pending = None;
        self.answer = Some(answer);
        true
    }

    /// The latest answer; `None` until the first arrives.
    pub fn get(&self) -> Option<&Result<T, String>> {
        self.answer.as_ref()
    }

    /// The latest answer if it is not an error.
    pub fn ok(&self) -> Option<&T> {
        self.answer.as_ref().and_then(|a| a.as_ref().ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_taken_when_it_arrives_and_a_dropped_sender_is_an_error() {
        let mut awaited: Awaited<u32> = Awaited::default();
        let (tx, rx) = oneshot::channel();
        assert!(!awaited.attach(rx), "nothing has arrived yet");
        assert!(awaited.get().is_none());
        tx.send(Ok(7)).expect("send");
        assert!(awaited.poll());
        assert_eq!(awaited.ok(), Some(&7));
        assert!(!awaited.poll(), "an answer is taken once");

        // A newer question keeps the old answer shown until its own arrives.
        let (tx, rx) = oneshot::channel::<Result<u32, String>>();
        assert!(!awaited.attach(rx));
        assert_eq!(awaited.ok(), Some(&7));
        drop(tx);
        assert!(awaited.poll());
        assert_eq!(
            awaited.get(),
            Some(&Err("the source stopped before answering".to_string()))
        );
    }
}
