// Methods, generics, impl Trait, labelled loop choice, per-call sampling, async fn.
// A label written for `loop = ".."` is not reported as unused.
#![deny(unused_labels)]

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

struct Trainer<T> {
    seen: Vec<T>,
}

impl<T: Clone + Default> Trainer<T> {
    // No training loop inside: each call is one iteration (state per call site).
    #[memlint::mem_guard]
    fn train_step(&mut self, batch: &[T]) -> usize {
        self.seen.extend_from_slice(batch);
        self.seen.len()
    }

    #[memlint::mem_guard(loop = "epochs")]
    fn fit(&mut self, epochs: usize) -> impl Iterator<Item = usize> + use<T> {
        let mut sizes = Vec::new();
        'epochs: for _ in 0..epochs {
            for _ in 0..3 {
                sizes.push(self.train_step(&[T::default()]));
            }
        }
        sizes.into_iter()
    }
}

struct Opt;

impl Opt {
    fn step(&mut self) {}
}

#[memlint::mem_guard]
async fn train_async(opt: &mut Opt, n: u32) -> u32 {
    let mut done = 0;
    for _ in 0..n {
        std::future::ready(()).await;
        opt.step();
        done += 1;
    }
    done
}

fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
    }
}

#[memlint::mem_guard(device = "host", tolerance = 4096, budget = "1GiB", on_leak = "warn")]
fn generic_sum<I: IntoIterator<Item = u64>>(items: I) -> u64 {
    items.into_iter().sum()
}

fn main() {
    let mut trainer = Trainer::<u8> { seen: Vec::new() };
    assert_eq!(trainer.train_step(&[1, 2]), 2);
    let sizes: Vec<usize> = trainer.fit(2).collect();
    assert_eq!(sizes, vec![3, 4, 5, 6, 7, 8]);
    assert_eq!(block_on(train_async(&mut Opt, 4)), 4);
    assert_eq!(generic_sum(vec![1, 2, 3]), 6);
}
