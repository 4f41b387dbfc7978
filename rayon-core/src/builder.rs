//! [`ThreadPoolBuilder`]: rayon's settings of a pool, turned into a [`magpie::Builder`] and a
//! thread-start function for [`magpie::Builder::build_with`].
//!
//! rayon lets a program start the pool's threads itself (`spawn_handler`, `build_scoped`), name
//! them, and run code on each before and after it works (`start_handler`, `exit_handler`).
//! magpie builds its workers and hands each one to a start function as a
//! [`magpie::WorkerStart`]; this module wraps that in rayon's [`ThreadBuilder`], whose `run`
//! calls the start handler, runs the worker until the pool stops, then calls the exit handler.
//! Without a spawn handler, the start function is a plain `std::thread` spawn; without a spawn
//! handler, names and start and exit handlers, magpie starts the threads itself, so that a call
//! from outside may run on the calling thread (`build_pool`).

use crate::thread_pool::ThreadPool;
use std::any::Any;
use std::fmt;
use std::io;
use std::sync::Arc;

type PanicHandler = dyn Fn(Box<dyn Any + Send>) + Send + Sync;
type ThreadHook = dyn Fn(usize) + Send + Sync;
type ThreadName = dyn FnMut(usize) -> String;

mod private {
    /// How a builder starts its threads: rayon's `ThreadSpawn`, sealed here too.
    pub trait ThreadSpawn {
        fn spawn(&mut self, thread: super::ThreadBuilder) -> std::io::Result<()>;

        /// Whether this starts plain threads that nothing of the program's runs on (see
        /// `build_pool`).
        fn plain(&self) -> bool {
            false
        }
    }
}
use private::ThreadSpawn;

/// Starts each worker on a new `std::thread`, named as the builder says.
#[derive(Debug, Default)]
pub struct DefaultSpawn;

impl ThreadSpawn for DefaultSpawn {
    fn spawn(&mut self, thread: ThreadBuilder) -> io::Result<()> {
        let mut b = std::thread::Builder::new();
        if let Some(name) = thread.name() {
            b = b.name(name.to_owned());
        }
        // Rust's default stack (or RUST_MIN_STACK): the worker's scheduling loop and the start
        // and exit handlers run here; the tasks run on stacks of their own.
        b.spawn(move || thread.run())?;
        Ok(())
    }

    fn plain(&self) -> bool {
        true
    }
}

/// Starts each worker with the program's own function (`spawn_handler`).
pub struct CustomSpawn<F>(F);

impl<F> ThreadSpawn for CustomSpawn<F>
where
    F: FnMut(ThreadBuilder) -> io::Result<()>,
{
    fn spawn(&mut self, thread: ThreadBuilder) -> io::Result<()> {
        (self.0)(thread)
    }
}

/// Why a pool could not be built.
#[derive(Debug)]
pub struct ThreadPoolBuildError {
    kind: ErrorKind,
}

#[derive(Debug)]
enum ErrorKind {
    GlobalPoolAlreadyInitialized,
    CurrentThreadAlreadyInPool,
    /// A setting or `MAGPIE_*` variable magpie cannot use.
    Setting(magpie::Error),
    IOError(io::Error),
}

impl ThreadPoolBuildError {
    fn new(kind: ErrorKind) -> ThreadPoolBuildError {
        ThreadPoolBuildError { kind }
    }

    pub(crate) fn is_already_initialized(&self) -> bool {
        matches!(self.kind, ErrorKind::GlobalPoolAlreadyInitialized)
    }
}

impl fmt::Display for ThreadPoolBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::GlobalPoolAlreadyInitialized => {
                f.write_str("The global thread pool has already been initialized.")
            }
            ErrorKind::CurrentThreadAlreadyInPool => {
                f.write_str("The current thread is already part of another thread pool.")
            }
            ErrorKind::Setting(e) => write!(f, "{e}"),
            ErrorKind::IOError(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ThreadPoolBuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::IOError(e) => Some(e),
            ErrorKind::Setting(e) => Some(e),
            _ => None,
        }
    }
}

/// One worker thread of a pool being built, as a spawn handler receives it: start a thread
/// (or arrange for one) that calls [`run`](Self::run).
pub struct ThreadBuilder {
    name: Option<String>,
    stack_size: Option<usize>,
    start_handler: Option<Arc<ThreadHook>>,
    exit_handler: Option<Arc<ThreadHook>>,
    panic_handler: Option<Arc<PanicHandler>>,
    worker: magpie::WorkerStart,
}

impl ThreadBuilder {
    /// The worker's index in its pool.
    pub fn index(&self) -> usize {
        self.worker.index()
    }

    /// The name the builder's `thread_name` gives this thread, if it has one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The stack size the builder asked for, if it did. magpie runs every task on a stack of
    /// this size of its own, so the thread itself needs no more than Rust's default.
    pub fn stack_size(&self) -> Option<usize> {
        self.stack_size
    }

    /// Runs the worker on the calling thread: the start handler, then the worker until its pool
    /// stops, then the exit handler.
    pub fn run(self) {
        let ThreadBuilder {
            start_handler,
            exit_handler,
            panic_handler,
            worker,
            ..
        } = self;
        let index = worker.index();
        run_hook(&start_handler, index, &panic_handler);
        worker.run();
        run_hook(&exit_handler, index, &panic_handler);
    }
}

/// Runs a start or exit handler, if there is one. Its panic goes where a spawned task's would:
/// the panic handler, or (without one) a message and an abort, as in rayon.
fn run_hook(hook: &Option<Arc<ThreadHook>>, index: usize, panics: &Option<Arc<PanicHandler>>) {
    let Some(h) = hook else {
        return;
    };
    if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h(index))) {
        match panics {
            Some(handler) => handler(p),
            None => {
                eprintln!("rayon-core (magpie): a thread's start or exit handler panicked and the pool has no panic handler; aborting");
                std::process::abort();
            }
        }
    }
}
impl fmt::Debug for ThreadBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadBuilder")
            .field("index", &self.index())
            .field("name", &self.name)
            .field("stack_size", &self.stack_size)
            .finish_non_exhaustive()
    }
}

/// Configures a [`ThreadPool`] or the global pool, with rayon's settings.
///
/// ```
/// let pool = rayon_core::ThreadPoolBuilder::new()
///     .num_threads(2)
///     .thread_name(|i| format!("worker-{i}"))
///     .build()
///     .unwrap();
/// let name = pool.install(|| std::thread::current().name().map(String::from));
/// assert!(name.unwrap().starts_with("worker-"));
/// ```
pub struct ThreadPoolBuilder<S = DefaultSpawn> {
    num_threads: usize,
    use_current_thread: bool,
    thread_name: Option<Box<ThreadName>>,
    panic_handler: Option<Arc<PanicHandler>>,
    stack_size: Option<usize>,
    start_handler: Option<Arc<ThreadHook>>,
    exit_handler: Option<Arc<ThreadHook>>,
    breadth_first: bool,
    spawn: S,
}

impl Default for ThreadPoolBuilder {
    fn default() -> Self {
        ThreadPoolBuilder::new()
    }
}

impl ThreadPoolBuilder {
    /// A builder with rayon's defaults.
    pub fn new() -> Self {
        ThreadPoolBuilder {
            num_threads: 0,
            use_current_thread: false,
            thread_name: None,
            panic_handler: None,
            stack_size: None,
            start_handler: None,
            exit_handler: None,
            breadth_first: false,
            spawn: DefaultSpawn,
        }
    }

    /// Starts each thread with `spawn`, which must start a thread (or arrange for one) that
    /// calls [`ThreadBuilder::run`]; its error fails the build.
    pub fn spawn_handler<F>(self, spawn: F) -> ThreadPoolBuilder<CustomSpawn<F>>
    where
        F: FnMut(ThreadBuilder) -> io::Result<()>,
    {
        ThreadPoolBuilder {
            num_threads: self.num_threads,
            use_current_thread: self.use_current_thread,
            thread_name: self.thread_name,
            panic_handler: self.panic_handler,
            stack_size: self.stack_size,
            start_handler: self.start_handler,
            exit_handler: self.exit_handler,
            breadth_first: self.breadth_first,
            spawn: CustomSpawn(spawn),
        }
    }

    /// Builds a pool whose threads are scoped threads that run `wrapper` (which must call
    /// [`ThreadBuilder::run`]), hands it to `with_pool`, and returns once the pool is dropped
    /// and every thread has ended. Threads may therefore borrow from the caller.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let started = AtomicUsize::new(0);
    /// let sum = rayon_core::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .build_scoped(
    ///         |thread| {
    ///             started.fetch_add(1, Ordering::Relaxed); // borrowed by the pool's threads
    ///             thread.run()
    ///         },
    ///         |pool| pool.install(|| rayon_core::join(|| 1, || 2)),
    ///     )
    ///     .unwrap();
    /// assert_eq!((sum, started.into_inner()), ((1, 2), 2));
    /// ```
    pub fn build_scoped<W, F, R>(self, wrapper: W, with_pool: F) -> Result<R, ThreadPoolBuildError>
    where
        W: Fn(ThreadBuilder) + Sync,
        F: FnOnce(&ThreadPool) -> R,
    {
        std::thread::scope(|scope| {
            let wrapper = &wrapper;
            let pool = self
                .spawn_handler(|thread| {
                    let mut b = std::thread::Builder::new();
                    if let Some(name) = thread.name() {
                        b = b.name(name.to_owned());
                    }
                    b.spawn_scoped(scope, move || wrapper(thread))?;
                    Ok(())
                })
                .build()?;
            // The pool must be dropped before the scope waits for its threads, whatever
            // `with_pool` does; a panic in it reaches the caller after that.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| with_pool(&pool)));
            drop(pool);
            match r {
                Ok(r) => Ok(r),
                Err(p) => std::panic::resume_unwind(p),
            }
        })
    }
}

impl<S: ThreadSpawn> ThreadPoolBuilder<S> {
    /// The pool.
    pub fn build(self) -> Result<ThreadPool, ThreadPoolBuildError> {
        self.build_pool().map(ThreadPool::from_pool)
    }

    /// Makes this the global pool: the one used outside any pool. An error if it exists already,
    /// because an earlier `build_global` made it or because something used it.
    pub fn build_global(self) -> Result<(), ThreadPoolBuildError> {
        if magpie::global_pool_exists() {
            return Err(ThreadPoolBuildError::new(
                ErrorKind::GlobalPoolAlreadyInitialized,
            ));
        }
        let pool = self.build_pool()?;
        magpie::set_global_pool(pool)
            .map_err(|_| ThreadPoolBuildError::new(ErrorKind::GlobalPoolAlreadyInitialized))
    }

    /// The thread count: `num_threads`, else `RAYON_NUM_THREADS` (then the older
    /// `RAYON_RS_NUM_CPUS`) if it is a positive number, else `None` (magpie's default:
    /// `MAGPIE_WORKERS` or the machine's parallelism).
    fn threads(&self) -> Option<usize> {
        let from_env = |k: &str| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .filter(|&n| n > 0)
        };
        let n = match self.num_threads {
            0 => from_env("RAYON_NUM_THREADS").or_else(|| from_env("RAYON_RS_NUM_CPUS")),
            n => Some(n),
        };
        n.map(|n| n.min(magpie::MAX_WORKERS))
    }

    fn build_pool(mut self) -> Result<magpie::Pool, ThreadPoolBuildError> {
        let setting = |e| ThreadPoolBuildError::new(ErrorKind::Setting(e));
        let mut b = magpie::Builder::default()
            .from_env()
            .map_err(setting)?
            .use_current_thread(self.use_current_thread);
        if let Some(n) = self.threads() {
            b = b.workers(n);
        }
        if let Some(bytes) = self.stack_size {
            // magpie's smallest task stack; a smaller request is a request for little memory.
            b = b.stack_size(bytes.max(64 << 10));
        }
        if let Some(h) = self.panic_handler.clone() {
            b = b.panic_handler(move |p| h(p));
        }
        let error = |e| match e {
            magpie::Error::CurrentThreadInPool => {
                ThreadPoolBuildError::new(ErrorKind::CurrentThreadAlreadyInPool)
            }
            magpie::Error::Os(_) => {
                ThreadPoolBuildError::new(ErrorKind::IOError(io::Error::other(e.to_string())))
            }
            e => setting(e),
        };
        if self.spawn.plain()
            && self.thread_name.is_none()
            && self.start_handler.is_none()
            && self.exit_handler.is_none()
        {
            // Nothing of the program's runs on these threads and nothing names them, so no code
            // can tell them from the caller's: magpie starts them itself, and a call from a
            // plain thread (`install`, or `join` and the parallel iterators on the global pool)
            // then runs on that thread in a sleeping worker's seat, with no wake-up and no wait
            // (magpie lends seats only in pools whose threads it started).
            return b.build().map_err(error);
        }
        let mut name = self.thread_name.take();
        let (stack_size, start, exit, panics) = (
            self.stack_size,
            self.start_handler.clone(),
            self.exit_handler.clone(),
            self.panic_handler.clone(),
        );
        let spawn = &mut self.spawn;
        b.build_with(|worker| {
            spawn.spawn(ThreadBuilder {
                name: name.as_mut().map(|f| f(worker.index())),
                stack_size,
                start_handler: start.clone(),
                exit_handler: exit.clone(),
                panic_handler: panics.clone(),
                worker,
            })
        })
        .map_err(error)
    }

    /// Worker threads; 0 (the default) means `RAYON_NUM_THREADS` if it is set to a positive
    /// number, else magpie's default (`MAGPIE_WORKERS`, else the machine's parallelism). More
    /// than [`max_num_threads`](crate::max_num_threads) is reduced to it.
    pub fn num_threads(mut self, num_threads: usize) -> Self {
        self.num_threads = num_threads;
        self
    }

    /// Makes the calling thread worker 0 of the pool, without a thread of its own (so the
    /// spawn handler, the name closure and the start and exit handlers are not called for it).
    /// It runs the pool's work only while it is inside a call to the pool: `install`, `join`,
    /// `scope`, `yield_now`, ... made on it, which use this pool from then on (magpie's
    /// `Builder::use_current_thread`). `build` fails if the thread is already a pool's worker,
    /// or lent to a pool that is still live, and with the `MAGPIE_*` settings that need every
    /// worker running (core sharing, places, tracing, migration, pinning). Once the pool is
    /// dropped, the thread is no one's worker again (rayon keeps it registered).
    pub fn use_current_thread(mut self) -> Self {
        self.use_current_thread = true;
        self
    }

    /// Names thread `i` `closure(i)`.
    pub fn thread_name<F>(mut self, closure: F) -> Self
    where
        F: FnMut(usize) -> String + 'static,
    {
        self.thread_name = Some(Box::new(closure));
        self
    }

    /// What the pool does with a panic nobody waits for (a spawned task's, a start or exit
    /// handler's). Without one the process aborts.
    pub fn panic_handler<H>(mut self, panic_handler: H) -> Self
    where
        H: Fn(Box<dyn Any + Send>) + Send + Sync + 'static,
    {
        self.panic_handler = Some(Arc::new(panic_handler));
        self
    }

    /// The stack size of the pool's tasks, in bytes (magpie runs each task on a stack of its
    /// own; at least 64 KiB, at most 1 GiB).
    pub fn stack_size(mut self, stack_size: usize) -> Self {
        self.stack_size = Some(stack_size);
        self
    }

    /// Accepted for rayon's sake; it has no effect (deprecated in rayon too).
    #[deprecated(note = "use a FIFO scope (`scope_fifo`) or `spawn_fifo` instead")]
    pub fn breadth_first(mut self) -> Self {
        self.breadth_first = true;
        self
    }

    /// Runs `start_handler(i)` on thread `i` before it takes any work.
    pub fn start_handler<H>(mut self, start_handler: H) -> Self
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.start_handler = Some(Arc::new(start_handler));
        self
    }

    /// Runs `exit_handler(i)` on thread `i` once the pool has stopped.
    pub fn exit_handler<H>(mut self, exit_handler: H) -> Self
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.exit_handler = Some(Arc::new(exit_handler));
        self
    }
}

impl<S> fmt::Debug for ThreadPoolBuilder<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = |b: bool| if b { "Some(<closure>)" } else { "None" };
        f.debug_struct("ThreadPoolBuilder")
            .field("num_threads", &self.num_threads)
            .field("use_current_thread", &self.use_current_thread)
            .field(
                "get_thread_name",
                &format_args!("{}", set(self.thread_name.is_some())),
            )
            .field(
                "panic_handler",
                &format_args!("{}", set(self.panic_handler.is_some())),
            )
            .field("stack_size", &self.stack_size)
            .field(
                "start_handler",
                &format_args!("{}", set(self.start_handler.is_some())),
            )
            .field(
                "exit_handler",
                &format_args!("{}", set(self.exit_handler.is_some())),
            )
            .field("breadth_first", &self.breadth_first)
            .finish()
    }
}

/// rayon's older builder, kept for programs that still use it.
#[deprecated(note = "use `ThreadPoolBuilder`")]
#[derive(Default)]
pub struct Configuration {
    builder: ThreadPoolBuilder,
}

#[allow(deprecated)]
impl Configuration {
    /// A configuration with the defaults.
    pub fn new() -> Configuration {
        Configuration::default()
    }

    /// The pool.
    pub fn build(self) -> Result<ThreadPool, Box<dyn std::error::Error + 'static>> {
        self.builder.build().map_err(Box::from)
    }

    /// See [`ThreadPoolBuilder::thread_name`].
    pub fn thread_name<F>(mut self, closure: F) -> Self
    where
        F: FnMut(usize) -> String + 'static,
    {
        self.builder = self.builder.thread_name(closure);
        self
    }

    /// See [`ThreadPoolBuilder::num_threads`].
    pub fn num_threads(mut self, num_threads: usize) -> Configuration {
        self.builder = self.builder.num_threads(num_threads);
        self
    }

    /// See [`ThreadPoolBuilder::panic_handler`].
    pub fn panic_handler<H>(mut self, panic_handler: H) -> Configuration
    where
        H: Fn(Box<dyn Any + Send>) + Send + Sync + 'static,
    {
        self.builder = self.builder.panic_handler(panic_handler);
        self
    }

    /// See [`ThreadPoolBuilder::stack_size`].
    pub fn stack_size(mut self, stack_size: usize) -> Self {
        self.builder = self.builder.stack_size(stack_size);
        self
    }

    /// See [`ThreadPoolBuilder::breadth_first`].
    pub fn breadth_first(mut self) -> Self {
        self.builder = self.builder.breadth_first();
        self
    }

    /// See [`ThreadPoolBuilder::start_handler`].
    pub fn start_handler<H>(mut self, start_handler: H) -> Configuration
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.builder = self.builder.start_handler(start_handler);
        self
    }

    /// See [`ThreadPoolBuilder::exit_handler`].
    pub fn exit_handler<H>(mut self, exit_handler: H) -> Configuration
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.builder = self.builder.exit_handler(exit_handler);
        self
    }

    pub(crate) fn into_builder(self) -> ThreadPoolBuilder {
        self.builder
    }
}

#[allow(deprecated)]
impl fmt::Debug for Configuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.builder.fmt(f)
    }
}

/// Makes `config` the global pool's configuration ([`ThreadPoolBuilder::build_global`]).
#[deprecated(note = "use `ThreadPoolBuilder::build_global`")]
#[allow(deprecated)]
pub fn initialize(config: Configuration) -> Result<(), Box<dyn std::error::Error>> {
    config.into_builder().build_global().map_err(Box::from)
}
