//! The form of overbrainer's lifecycles: a pure state machine that takes events and
//! returns effects, no I/O, no clock (time comes in with the events). A followed run's
//! life (`runs::lifecycle`) and a pod's life (`runpod::lifecycle`) are both of this
//! form; each has its own driver that performs the effects. A ground module, so that
//! neither lifecycle imports the other's layer.

/// A pure state machine: a state that takes events and returns effects.
pub trait Machine {
    /// What happened.
    type Event;
    /// What to do.
    type Effect;
    /// Takes `event` into the state and returns what to do, in order.
    fn handle(&mut self, event: Self::Event) -> Vec<Self::Effect>;
}
