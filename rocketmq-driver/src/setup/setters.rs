//! The builder setters the push and lite pull builders share, generated from one list so that
//! each builder names only the ones it has.

/// Generates the builder methods that only change the builder's `setup: Setup` field, each
/// calling the [`Setup`] method of its name, so the push and lite pull builders share them. A
/// builder names the ones it has, in the order its docs list them, each with its own doc
/// comment:
///
/// ```text
/// setup_setters! {
///     /// Adds a name server address (`host:port`); call again for more.
///     name_server;
///     /// Where queues without a committed offset start.
///     consume_from;
/// }
/// ```
macro_rules! setup_setters {
    () => {};
    // Each name gives its method's parameters to `@method`.
    ($(#[$doc:meta])* name_server; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] name_server(addr: impl Into<String>));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* subscribe; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] subscribe(
            topic: impl Into<String>,
            expression: impl Into<String>
        ));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* subscribe_sql92; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] subscribe_sql92(
            topic: impl Into<String>,
            expression: impl Into<String>
        ));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* consume_from; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] consume_from(
            from: $crate::ConsumeFrom
        ));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* auto_commit; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] auto_commit(on: bool));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* broadcasting; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] broadcasting());
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* offset_dir; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] offset_dir(
            dir: impl Into<std::path::PathBuf>
        ));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* max_reconsume_times; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] max_reconsume_times(times: i32));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* client_ip; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] client_ip(ip: impl Into<String>));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* instance_name; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] instance_name(
            name: impl Into<String>
        ));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* tls; $($rest:tt)*) => {
        #[cfg(feature = "tls")]
        $crate::setup::setup_setters!(@method [$(#[$doc])*] tls(tls: $crate::Tls));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* namespace; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] namespace(
            namespace: impl Into<String>
        ));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* credentials; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] credentials(
            credentials: consumer_core::Credentials
        ));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* allocation; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] allocation(
            strategy: $crate::Strategy
        ));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* metrics; $($rest:tt)*) => {
        #[cfg(feature = "metrics")]
        $crate::setup::setup_setters!(@method [$(#[$doc])*] metrics(every: std::time::Duration));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* trace; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] trace());
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* trace_topic; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] trace_topic(topic: impl Into<String>));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* rate_limit; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] rate_limit(
            limit: $crate::RateLimit
        ));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* topic_rate_limit; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] topic_rate_limit(
            topic: impl Into<String>,
            limit: $crate::RateLimit
        ));
        $crate::setup::setup_setters!($($rest)*);
    };
    ($(#[$doc:meta])* configure; $($rest:tt)*) => {
        $crate::setup::setup_setters!(@method [$(#[$doc])*] configure(
            adjust: impl FnOnce(&mut consumer_core::ConsumerConfig)
        ));
        $crate::setup::setup_setters!($($rest)*);
    };
    (@method [$($doc:tt)*] $name:ident($($arg:ident: $ty:ty),*)) => {
        $($doc)*
        #[must_use]
        pub fn $name(mut self, $($arg: $ty),*) -> Self {
            self.setup.$name($($arg),*);
            self
        }
    };
}
pub(crate) use setup_setters;
