//! `autodiff_forward_without_backward`: burn forward passes on an autodiff model in a loop that
//! never runs backward.

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::model::{CallKind, FnModel, Iteration, LoopId, Span, Store, Taint, TrainingCall, TrainingCallKind};
use crate::rule::{Applies, Group, Rule, RuleMeta};

pub struct AutodiffForwardWithoutBackward;

pub static META: RuleMeta = RuleMeta {
    id: "autodiff_forward_without_backward",
    summary: "forward passes on an autodiff model in a loop that never runs backward",
    default_level: Level::Warn,
    group: Group::Stable,
    docs: r#"### What it does
In burn code that works on an autodiff backend (`B: AutodiffBackend`, `Autodiff<_>`, or a device
from `device.autodiff()`), finds forward passes inside a loop that runs no backward — rollouts,
`act()` in reinforcement-learning agents, evaluation — directly or through a function of the
crate that runs such a forward (`agent.act(obs)`; a method of a model that computes a tensor from
the parameters' tensors it reads, `x.matmul(layer.weight.val() * mask)` in a hand-written layer
with no `forward` call, is one too). A loop with several such forward passes is one
finding, at the first, with the others labelled. A model's own method that runs its forward
passes in a loop of its own and returns the result (`model.sample(n)`: a denoising or generation
loop that feeds each step's output back) is reported where it is called on an autodiff model
outside any loop, in a function that runs no backward outside its loops, or only before the
call (sampling after training), and not in a training-step helper whose result its callers
backpropagate (`let h = model.encode(src);` in `fn train_step(..) -> Tensor`): their backward
sweeps it. A loop that follows every backward of its function, in a function
nothing calls once per training step (`let model = train(..);` and then an evaluation loop in
`main`), is reported: no backward follows its forwards. The closure of an iterator method is a
loop body (`batches.iter().map(|b| model.forward(b.clone()))`, rayon's `par_iter().for_each(..)`),
and a loop whose body runs at most once (`for x in loader.iter() { ..; break; }`, or `return ..;`, `0..1`,
`.take(1)`) is not a loop. The body of an `Iterator::next` is one iteration of the loop that drives the iterator (`for
step in runner.take(n)`). A function whose every backward waits for a warm-up (`fn
step_once(&mut self) { self.agent.act(..); self.agent.observe(..) }`) hands its forwards to the
loops that call it. A method whose forwards on the autodiff model run only for some values of a
parameter (`if explore { self.net.forward(x) } else { self.net.valid().forward(x.inner()) }`,
`match mode { ActMode::Explore => .., _ => .. }`) runs none on a call that passes a constant
taking none of them (`agent.act(obs, false)`, `ActMode::Exploit`). A model built with an
autodiff backend named in generic arguments (`train(Net::<Train>::new(&dev), ..)` with `type
Train = Autodiff<NdArray>`) makes the function autodiff. A helper that sums its forwards into the value it returns, or collects them
(`(0..k).map(|i| model.forward(batch(i)).mean()).collect()`), to a caller that
backpropagates it (`let loss = batch_loss(&model, xs); loss.backward()`, also through further
helpers that return what they compute from it), is judged at its callers: a validation loop calling it on the autodiff model is reported there. A forward in a closure handed to a crate function that calls it in a loop without
backward (`evaluate_episode(&mut env, &mut |o| agent.act(o))`) is reported there, even inside a
training loop. A loop that calls a callback parameter (`model = apply(model, loss)`) runs
backward when a caller hands it a closure that does. A training loop split by a setting (`if !config.dry_run { ..backward.. } else {
forward only }`) is reported for the runs where the setting takes the forward's side.

A call of a method of the crate that runs a forward and keeps its graph-carrying output in a
field of its receiver that no method of its type ever empties or starts afresh (a monitor's
`self.history.push(drift)` after each step, a running sum of outputs) is reported in a training
loop as well, when the receiver outlives the iteration: no backward consumes those graphs, and
the store frees none a value still holds. A buffer some method empties (`self.saved.clear()`,
`drain(..)`, `std::mem::take(&mut self.saved)`: an on-policy agent's update) is not, and neither
is a method's own rollout loop that pushes its outputs into such a buffer of `self`
(`self.storage.log_probs.push(logp)` in `collect`, drained by `update` into its backward).

A rollout nested in a training loop is reported too when its outputs leave each step as host
data (`q.argmax(1).into_scalar()`): no backward ever reaches them, so every step's graph state
waits in the store for the next backward, and the memory grows with the rollout's length. A
nested loop that hands graph-carrying values on (`h = cell.forward(x, h)`, outputs collected for
the loss, losses folded into an `Option` that `if let Some(loss) = total { loss.backward() }`
consumes) is an unrolled computation and is not; nor is a call that keeps its outputs in its
receiver's buffer (`agent.act(obs)` pushing the step's log-probability into `self.saved`, which
the end-of-episode update backpropagates: on-policy agents), or in a buffer its caller lends it
and keeps past the loop (`agent.act(obs, &mut episode)` pushing into `buf.log_probs`). So is a forward in the outer loop of a
training loop whose backward runs only in the loop inside it (a validation pass once an epoch,
beside the loop over the batches) when only host data leaves it (`to_f64(&val_loss)`,
`.into_scalar()`): every layer's activations of the whole pass wait in the store for the next
epoch's first backward. A forward beside the backward of its own loop (`act()` between `learn()`s,
a preview every few steps) is swept within the iteration and is not reported, nor is one whose
output reaches the backward through a helper's tuple, a detached target or a value kept past the
iteration. Nor is a loop with a small literal bound (a literal
or constant of at most 32, as for a warm-up's short wait below) in a training iteration whose
backward does not wait for a warm-up (`for i in 0..3 { preview(..) }` once an epoch, a PPO
rollout of `T_HORIZON = 20` steps before each update): that backward sweeps its few forwards. In the training loop itself, a backward that
waits for a warm-up (`if memory.len() > learning_starts { train() }`, `if buffer.len() < n { return; }`
before it, or a test of the crate that compares a length: `if !agent.can_learn() { return }`,
`let Some(batch) = memory.sample() else { return }`, `if let Some(batch) = memory.sample(n) { .. }`
and the `Some` arm of a `match` on it (or the rest of the loop after `let batch = match
memory.sample(n) { Some(b) => b, None => continue };`), where `sample` hands nothing until the
memory holds `n`;
or a test of a counter of the loop that the
loop never resets: `if step > learning_starts { learn() }`, `if episode == 0 { continue }`; in the
loop or in the called function) leaves every forward before it in the store; a backward skipped by any other check (a non-finite
loss) is taken for a guard. A forward that itself waits for the same threshold (`if self.step <
self.config.learning_starts { return random_action() }`) runs in no warm-up and is not reported,
nor is a warm-up that waits only for a replay buffer to hold one batch (`if memory.len() >=
self.batch_size { learn() }`, also through a crate function such as `memory.sample()` that hands
`None` until then): it is a batch of forwards, once, and every later step's backward sweeps its
own. Nor is a wait for a handful of items, a literal or constant of at most 32 (`if
buffer.len() == T_HORIZON` with `T_HORIZON = 20`): at most that many forwards wait for each
backward. Nor is a wait for a collection the code after it empties (`if self.pending.len() <
self.k { return None }` before `std::mem::take(&mut self.pending)` and the backward, gradient
accumulation over micro-batches): each wait starts from empty, and its backward sweeps its
forwards.

The backend is read from types across the crate: type aliases (`type TrainingBackend =
Autodiff<Wgpu>;`, each in its own module: `type Wgpu = burn::backend::Wgpu<f32, i32>;` is burn's
plain backend, whatever another module calls `Wgpu`; one named `Backend`, like burn's trait, only where it is declared or imported
from the crate's own module: `use backend::{Backend, Device};`), generic arguments (`Agent::<Ad> { .. }`, `config.init::<Ad>(&d)`,
`Net::<Ad>::new(&d).load_file(..)`), the declared result of a crate function a local is bound to
(`let model = train(..);` with `fn train(..) -> Net<Ad>`), struct field types (`self.policy.act(..)` with `policy: Greedy<B>` calls
`Greedy::act`; `labeler.select(&model, u)` on a `Labeler` calls the crate's `Labeler::select`, not
the tensor operation of that name), a function's parameter types and the bounds of their type parameters (not a
configuration parameter's: `S: ModelSpec<MyBackend, MyAutodiffBackend>` with no value of type
`S` names both backends and makes nothing autodiff), and a function generic over the backend (`fn rollout<B: Backend>`) counts as
autodiff when one of the crate's calls instantiates it with an autodiff backend (an autodiff
caller that does not hand it `model.valid()`, or `evaluate::<TrainingBackend>(..)`; a test does
not count: it runs once and ends); the finding then names that call. With burn 0.22, whose types
name no backend, a function that is not generic counts as autodiff when a caller on an autodiff
device (`device.autodiff()`; not in a crate whose manifest requires burn 0.21 or older, whose
devices have no `autodiff()`) hands it a model (`embed_bank(&encoder, &bank)`); not a call that
hands only the plain device and literals (`infer(device, "model.mpk")`), nor a model made
untracked where it is bound (`let model = train(&cfg, &ad).valid();`). A loop whose every loop, from
it outwards in its function, has a literal bound of at most 32 (`for i in 0..5 { println!(..,
model.forward(x(i))) }` after training) runs a handful of forward passes once per call and is
left alone; a caller that calls the function in a loop is judged at its call. A test's own loops are left
alone (it runs once over literal inputs or its fixture's data, and ends), unless one has a
literal bound above 256 iterations (timing loops)
(literal bounds include the crate's integer constants and constant arrays: `0..PREVIEW_LEN`,
`PROMPTS.iter()`). A
call through a type parameter (`self.agent.update(batch)` with `agent: A`) reaches the trait's
methods only, and when no type of the crate implements the method (a library's trainer, whose
users write the agents), its loop is left alone: their `update` may run backward. Called on a
field whose type names the argument (`self.session.act(..)` with `session: Session<E,
DqnAgent<B>>`), a method of the generic type reaches that type's impl only (`DqnAgent::act`, not
what every agent of the crate does), and so does one called on a local built around a known agent
(`let mut session = Session::new(env, DqnAgent::new(..))`, the constructor's parameter named like
the field, or a struct literal); so does a generic function handed a value of a known type
(`run(&mut agent, ..)` with `let mut agent = DqnAgent::new(..)` and `fn run<A: Agent>(agent: &mut
A, ..)`), whose loop is then reported for that call. A parameter (or
an annotated local) of a trait object or `impl Trait` type (`mover: &mut dyn Agent`) reaches the
trait's methods the same way, and its function takes its backend from the caller as a generic
one does; a method of the crate's trait it does not implement is a library's (`out: &mut dyn
Write`), not an unknown one. Such a call applies what the impls that can hold a model do: an impl
on a struct of host values only (`RandomAgent { state: u64 }`) runs none. A model of
plain tensors (a `Module` whose weights are `Tensor` fields, no `Param`: constants, as when
weights are loaded with `Tensor::from_data`) records no graph of its own, unless the crate asks a
tensor to `require_grad()` or steps the type with an optimizer; nor does a model mapped by one of
the crate's `ModuleMapper`s that sets `require_grad(false)` (`base.map(&mut Freeze)`), or a struct
built from an untracked model and a device (`Session::new(&net.valid(), &dev)`); neither does a struct field every
write of which is an untracked model (`Self { backbone: load(..).no_grad(), .. }`), nor, with
burn 0.22, a model built on the plain device in a function that also makes `device.autodiff()`
(`Mlp::new(.., &device)`; `.fork(&ad)` makes it tracked). A model handed over untracked (`model.valid()`,
`AutodiffModule::valid(&model)`, `.map(Module::no_grad)`, and burn-train 0.20's
`training.launch(learner).model`, the inference module, as 0.19's `learner.fit(..).model` is) stays untracked in the functions it
reaches and in the closures it is handed to (rayon's `map_with(model.valid(), |model, i| ..)`,
a callback of the caller's that a trainer of the crate calls with `&self.model.valid()` on every
call), and so does a parameter, a local or a struct field whose type names the inner backend
(`model: &Lm<B::InnerBackend>`), and what a call of a crate function returns whose declared result
does (`-> Option<(f32, Net<B::InnerBackend>)>`, and no other backend). A model's own methods that return what they compute
(blocks run in turn) are part of a forward pass and are left to their callers; a loss module's
`forward` is not a model's.

A forward pass in a training step (or in a helper each step calls: `fn soft_targets(&self, x)`
called from `train_step`, itself called in a training loop) on a module that no backward trains
is reported as well, when its output is cut at once (`self.teacher.forward(x).detach()`, `.argmax(1).into_data()`): a
field of `self` that the crate writes only where it builds the struct (a teacher for
distillation, a frozen encoder handed to `new`), never afterwards. burn's step returns the
trained module, which has to be stored back, so a field never written again is never trained; a
field the crate writes anywhere by that name (`self.target = online.clone()`, `target.l1.weight
= ..`), lends `&mut` (`polyak(&online, &mut self.target)`) or calls a method on as a statement
(`self.target.sync(&online);`) is not reported, nor is one made untracked where it is
built (`teacher.no_grad()`), nor a forward whose output reaches the loss (the backward runs
through it).

### Why is this bad?
burn keeps autodiff graph state in a process-wide store that is swept only inside `backward()`.
Forward passes with no backward grow it even after the tensors are dropped: 400 forwards of a
512×512 linear layer grew RSS from 4.6 to 242 MB (burn 0.22.1, CPU), against 9.8 MB with
`model.valid()`. A backward sweeps the state of every forward before it, its own graph or not
(`experiments/burn-sweep`, burn 0.21, CPU, 600 steps of 5 forwards each: 8 → 1,727 MB with no
backward; 9–15 MB throughout when each step then trains on another forward, outputs detached or
not): a rollout nested in a training loop costs memory in proportion to its length, once per
step, and a warm-up in proportion to the warm-up; a loop with no backward at all grows without
bound. The sweep reaches only graphs that hang on parameters some backward uses: forwards
through a separate module on the autodiff backend that no backward trains (a target network
built apart and never made `valid()` or `no_grad()`) grew the heap by 330 KB per step although
every step trained the online model (`experiments/burn-orphan-forwards`, burn 0.21, CPU; a
clone of the trained model, or the same module with `no_grad()`, stayed flat), and by 2.77 MiB
per step on an H200 (burn 0.21 CUDA), where the same detached forward of the trained model
stayed flat. Swept is not free: a validation pass over 4,096 rows through four 512-wide linear
layers every 10 steps on the autodiff model raised the run's peak RSS from 46 MB (on
`model.valid()`) to 102 MB (`experiments/burn-sweep validate`, burn 0.21, CPU). Across versions (`experiments/burn-orphan-forwards/versions`, CPU): a detached
forward of the trained model is swept in 0.16.1, 0.18.0, 0.19.1, 0.20.1 and 0.21.0; the separate
module grows from 0.19.1 on and stays flat in 0.16.1 and 0.18.0 (one graph for all tensors,
cleared as a whole by a backward); 0.19.1 also grows by about 4.9 KB per plain training step.
A detached forward of a separate module in a training step is reported when the crate is on
burn 0.19 or later (or its requirement allows it), and its probe (a distillation learner with a
pretrained teacher, burn 0.21, CPU) grew 775 MB in 700 steps. The store is new in burn 0.13: in 0.12.1
each tensor owns its graph, and 3,000 forwards with no backward left the heap byte-flat (0.13.2:
+333 KB per forward). memlint reads the package's burn requirement from its manifest and leaves
code on burn 0.12 or older alone.

### Example
```rust
for step in 0..steps {
    let q = agent.model.forward(state.clone());   // autodiff model, no backward in this loop
    let action = q.argmax(1).into_scalar();
}
```

### Use instead
```rust
let policy = agent.model.valid();                  // the inner (non-autodiff) backend
for step in 0..steps {
    let q = policy.forward(state.clone().inner());
    let action = q.argmax(1).into_scalar();
}
```
"#,
};

impl Rule for AutodiffForwardWithoutBackward {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn applies(&self) -> Applies {
        Applies::Known(|s| s.graph_swept_by_backward)
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        // A model's own methods that return what they compute (blocks run in turn, inputs
        // processed in groups, `-> Output<B>`) are part of a forward pass: the code that calls
        // the model decides whether a backward follows. A model method that returns host data
        // (`fn play(&self, env) -> f32`) is a rollout and is judged here.
        if f.owner_is_model() && !f.returns_plain() {
            return;
        }
        // One finding per loop and shape: the first forward pass, with the loop's others as
        // further labels (one `model.valid()` before the loop fixes them all).
        // With whether every forward is the loop's own (no call of a function that runs them,
        // perhaps in a loop of its own: `model.sample(1_000, 500)`).
        let mut found: Vec<(LoopId, Shape, Vec<Call<'_>>, bool)> = Vec::new();
        let mut param_off = None;
        let mut setting_off = None;
        for e in f.calls_of(CallKind::Forward) {
            // The model is autodiff when this function works on one, or the called function does.
            if !(f.autodiff() || e.via().is_some() || e.autodiff_model()) || e.no_grad() || e.reported_inside() {
                continue;
            }
            if e.receiver().is_some_and(|r| f.taint(r).has(Taint::INERT_MODEL)) {
                continue;
            }
            // A method that keeps its forward's outputs in a field of its receiver that nothing
            // empties (a monitor's log, a running mean of outputs), called in a training
            // iteration on a receiver that outlives it: no backward consumes those graphs, and
            // the store frees none a value still holds.
            if let Some(field) = f.forward_kept_for_good(e) {
                report_kept(f, cx, e, field);
                continue;
            }
            // `evaluate_episode(&mut env, &mut |o| agent.act(o))`: the closure runs in the
            // called function's loop, which runs no backward.
            if let Some(by) = e.closure().and_then(|c| f.closure_looped_by(c)) {
                report_closure(f, cx, e, by);
                continue;
            }
            // A module no step trains (`self.teacher`, which the crate writes only where it
            // builds the struct: a burn step returns the trained module, which has to be stored
            // back), whose output is cut at once, in a training step: a backward sweeps only the
            // graphs that hang on parameters it uses (burn 0.19 on), so every one of these
            // forwards stays in the store.
            // Also in a helper each training step calls (`fn soft_targets(&self, x)` with
            // `self.teacher.forward(x).detach()`).
            if f.spec().untrained_graphs_kept
                && !f.is_test()
                && let Some(field) = f.apart_receiver(e)
                && f.cut_at_once(e)
                && (f.iteration_of(e.in_loop()).is_some() || f.per_step_from().is_some())
            {
                report_apart(f, cx, e, field);
                continue;
            }
            // `self.agent.update(batch)` with `agent: A` and no impl of the trait in the crate
            // (a library's generic trainer): the users' impls may well run backward there.
            if e.in_loop().is_some_and(|l| f.opaque_call_in(l)) {
                continue;
            }
            let Some(l) = e.in_loop() else {
                // `model.sample(n)` outside any loop: the model method's own loop runs the
                // forward passes, and no backward of this function runs outside its loops.
                // Not in a training-step helper whose result its callers backpropagate (`let h =
                // model.encode(src);` in `fn train_step(..) -> Tensor`): their backward, right
                // after the call, sweeps every forward before it.
                if e.samples()
                    && !f.result_backpropagated()
                    && (f.iteration_of(None).is_none() || after_every_backward(f, e.span().start, None))
                {
                    report_sampler(f, cx, e);
                }
                continue;
            };
            // A loop that runs backward (or a body that does) sweeps the graph store, when the
            // backward runs on every iteration where the forward's rollout does. A backward only
            // on some (`if buffer.len() > warmup { learn() }`, the rollout loop outside the `if`)
            // leaves every forward before the first one in the store.
            let shape = match f.iteration_of(Some(l)) {
                // A helper that sums or collects its forwards into what it returns to a caller
                // that backpropagates it (`let loss = batch_loss(&model, xs); loss.backward()`
                // with `fn batch_loss(..) -> Tensor { for x in xs { total = total +
                // model.forward(x) } total }`): that backward runs through them. A caller that
                // does not is reported at its call.
                None if f.result_backpropagated() && f.loop_accumulates_returned_graph(l) => continue,
                // A call in it may run backward (`agent.learn(..)` on agents of several types,
                // one of which keeps the trait's no-op default): it may sweep every iteration.
                None if f.loop_may_run_backward(l) => continue,
                // A rollout that pushes its outputs into an on-policy buffer of `self` that a
                // method of the type empties (`update()` drains it into its backward): held
                // until that update, which sweeps them.
                None if f.pushes_into_emptied_field(l) => continue,
                None => Shape::NoBackward,
                // The forward in the training loop itself: a backward skipped on some of its
                // iterations is usually a guard (a non-finite loss); it is a warm-up when every
                // backward of the loop waits for a collection to reach a size (`if
                // memory.len() > batch_size { train() }`, here or in the called function) and
                // the forward does not.
                Some(it @ Iteration::Loop(outer)) if outer == l => {
                    let backwards = backwards_of(f, it);
                    let warm_up = !backwards.is_empty()
                        && backwards.iter().all(|b| b.waits_for_size())
                        && !f.waits_for_size(e.path())
                        && !e.waits();
                    if warm_up && backwards.iter().all(|b| b.waits_briefly()) {
                        // The warm-up of a replay buffer that waits for one batch (`if
                        // memory.len() >= batch_size { learn() }`): a batch of forwards, once;
                        // then every iteration's backward sweeps its own.
                        continue;
                    } else if warm_up {
                        Shape::WarmUp
                    } else if !f.on_param_branch(e.path())
                        && let Some(closed) = f.closed_by_a_caller(backwards.iter().map(|b| b.path()))
                    {
                        // `if is_train { loss.backward() }` and a caller that passes `false`: on
                        // those calls the loop runs no backward (a validation pass).
                        param_off = Some(closed);
                        Shape::ParamOff
                    } else if let Some(split) = f.split_by_a_setting(e.path(), backwards.iter().map(|b| b.path())) {
                        // `if !config.dry_run { ..backward.. } else { forward }`: a setting no
                        // iteration changes sends every iteration one way, so on runs where it
                        // takes the forward's side, the loop runs no backward at all.
                        setting_off = Some(split);
                        Shape::SettingOff
                    } else if backwards.is_empty() && !swept_later_in(f, e, outer) && orphaned(f, e, it) {
                        // A validation pass once an epoch, beside the loop over its batches that
                        // runs the backward: its whole graph state waits in the store for the
                        // next epoch's first backward. (In the loop that runs the backward
                        // itself, `act()` between `learn()`s or a preview every few steps, that
                        // backward comes within the iteration and sweeps one batch's worth.)
                        Shape::Orphan
                    } else {
                        continue;
                    }
                }
                // The body's backward sweeps the loop's forwards at the function's next call, when
                // something calls it once per training step. Not when every backward runs before
                // the loop and nothing calls the function per step (`let model = train(..);`,
                // then an evaluation loop in `main`): no backward follows those forwards.
                Some(Iteration::Call) if !after_every_backward(f, f.loop_header(l).start, Some(l)) => continue,
                Some(Iteration::Call) => Shape::NoBackward,
                // A few forward passes in a literally bounded loop of the training iteration
                // (`for i in 0..3 { preview(generator.forward(..)) }` once an epoch): the
                // iteration's backward sweeps them; the store never holds more than one
                // iteration's handful.
                // Not when that backward waits for a warm-up: until then, nothing sweeps.
                // A loop over a collection of models, each run once (`for (k, head) in
                // m.heads.iter().enumerate() { head.forward(..) }`, per-head metrics): bounded by
                // the model's parts, swept by the iteration's backward all the same.
                Some(Iteration::Loop(outer))
                    if (f.literally_bounded_within(l, outer, SWEPT_LOOP_MAX) || walks_models(f, e, l, outer))
                        && sweeps_every_iteration(f, outer) =>
                {
                    continue;
                }
                Some(it) => {
                    let backwards = backwards_of(f, it);
                    // `if let Some(loss) = total { loss.backward() }` after a loop that folds
                    // its losses into `total` runs whenever the loop did.
                    if !backwards
                        .iter()
                        .any(|b| e.path().starts_with(b.path()) || f.runs_once_filled(b.path(), e.path(), l))
                    {
                        Shape::Conditional
                    } else if threads_graph_out(f, l) {
                        // An unrolled computation (`h = cell.forward(x, h)`, outputs collected
                        // for the loss): the backward after the loop runs through it.
                        continue;
                    } else if (e.kept_by_receiver() && receiver_outlives(f, e, l))
                        || e.kept_in_arg().is_some_and(|b| f.outlives(b, Iteration::Loop(l)))
                    {
                        // `agent.act(obs)` pushes its log-probability into the agent's buffer,
                        // which the end-of-episode backward consumes (REINFORCE, on-policy):
                        // the outputs do not leave as host data.
                        continue;
                    } else {
                        // A rollout: its outputs leave each step as host data, so no backward
                        // ever reaches them; each step's graph state waits for the next one.
                        Shape::Rollout
                    }
                }
            };
            let label = match e.via() {
                Some(callee) => format!("`{callee}` runs a forward pass on an autodiff model"),
                None => "forward pass on an autodiff model".to_string(),
            };
            let direct = e.via().is_none();
            match found.iter_mut().find(|(fl, fs, _, _)| *fl == l && *fs == shape) {
                Some((_, _, calls, all_direct)) => {
                    calls.push((e.span(), label, e.forward_at(), e.forward_via()));
                    *all_direct &= direct;
                }
                None => found.push((l, shape, vec![(e.span(), label, e.forward_at(), e.forward_via())], direct)),
            }
        }
        for (l, shape, calls, all_direct) in found {
            // A test runs once and ends: over literal inputs (`for x in &[0.1, 0.5]`, `for i in
            // 0..4`) or its fixture's data (`for batch in loader.iter()` over a toy dataset), the
            // graph state it leaves is small and dies with it. Not a loop of the test with a long
            // literal bound (`for _ in 0..10_000`, a timing or stress loop).
            if f.is_test() && !f.literally_longer_than(l, TEST_LOOP_MAX) {
                continue;
            }
            // A handful of forward passes, once (`for i in 0..5 { println!(.., model.forward(x_i)) }`
            // after training): every loop from this one outwards has a small literal bound, and
            // the forwards are its own (not `for _ in 0..10 { model.sample(1_000, 500) }`). A
            // caller that runs the function in a loop of its own is judged at its call.
            // Not a loop that feeds what it computes back in (`for t in 0..20 { x =
            // model.forward(x, t) }`, a denoising sampler): each step there can be a large
            // model's whole graph, and all of them wait in the store.
            if all_direct && f.runs_a_handful_once(l) {
                continue;
            }
            report_loop(f, cx, l, shape, &calls, param_off, setting_off);
        }
    }
}

/// The finding of loop `l`: the first of its forward passes `calls` (span, label), the others as
/// further labels.
fn report_loop(
    f: &FnModel,
    cx: &mut Context<'_>,
    l: crate::model::LoopId,
    shape: Shape,
    calls: &[Call<'_>],
    param_off: Option<(&str, bool, (&std::path::Path, usize, &str))>,
    setting_off: Option<(&Span, bool)>,
) {
    let off_label;
    let (message, loop_label) = match shape {
        Shape::ParamOff => {
            let (name, opens_on, _) = param_off.unwrap_or(("flag", true, (std::path::Path::new(""), 0, "")));
            off_label = format!("this loop runs backward only when `{name}` is {opens_on}");
            ("on calls that turn its backward off", off_label.as_str())
        }
        Shape::SettingOff => {
            let (name, value) = setting_off.map_or(("setting".to_string(), true), |(span, value)| {
                (cx.snippet(span).split_whitespace().collect::<String>(), value)
            });
            off_label = format!("when `{name}` is {value}, no iteration of this loop runs backward");
            ("on runs whose setting turns its backward off", off_label.as_str())
        }
        // The loop around runs a backward, but not on this loop's path (a validation loop after
        // the epoch's training loop, a rollout beside a branch that trains): say so of the loop
        // that has none.
        Shape::Conditional if !f.loop_runs_backward(l) => (
            "in a loop without backward",
            "this loop never runs backward; the backward of the loop around it is not on its path",
        ),
        Shape::Conditional => {
            ("on iterations that may run no backward", "backward runs only on some iterations of this loop")
        }
        Shape::Rollout => (
            "in a rollout whose outputs no backward reaches",
            "every step of this loop keeps its graph state until the next backward",
        ),
        Shape::WarmUp => {
            ("on every step of a warm-up without backward", "backward runs only once a collection has reached a size")
        }
        Shape::NoBackward => ("in a loop without backward", "this loop never runs backward"),
        Shape::Orphan => (
            "whose output no backward reaches",
            "this loop runs backward only in the loop inside it, on other forward passes; only host data leaves this one",
        ),
    };
    let Some(((first, label, first_at, first_via), rest)) = calls.split_first() else { return };
    let message = match rest.len() {
        0 => format!("forward pass on an autodiff model {message}"),
        n => format!("{} forward passes on an autodiff model {message}", n + 1),
    };
    let mut report = Report::new(message, (*first).clone(), label.clone()).label(f.loop_header(l).clone(), loop_label);
    for (span, label, _, _) in rest {
        report = report.label((*span).clone(), label.clone());
    }
    let note = match shape {
        Shape::Orphan => {
            "burn sweeps its autodiff graph store only inside `backward()`: this forward's graph state stays in it until the next backward, on top of the training step's own"
        }
        _ => {
            "burn sweeps its autodiff graph store only inside `backward()`; forwards without one grow it every iteration"
        }
    };
    let mut report = report
        .help("run the forward on `model.valid()` (the inner backend), or take `.inner()` tensors before the loop")
        .note(note);
    // A forward inside a called function: where it runs, and the call that leads there.
    push_forward(&mut report, *first_via, *first_at, "the forward pass inside the call");
    if let (Shape::ParamOff, Some((name, opens_on, (path, line, caller)))) = (shape, param_off) {
        report.elsewhere.push((
            path.to_path_buf(),
            line,
            format!("`{caller}` calls this function with `{name}` = {}", !opens_on),
        ));
    }
    add_places(&mut report, f, None, "");
    cx.report(report);
}

/// A forward pass on `field`, a module no step trains, in a training step.
fn report_apart(f: &FnModel, cx: &mut Context<'_>, e: &crate::model::VocabCall, field: &str) {
    let label = match e.via() {
        Some(callee) => format!("`{callee}` runs a forward pass on `{field}`, which no optimizer step trains"),
        None => format!("forward pass on `{field}`, which no optimizer step trains"),
    };
    let mut report = Report::new("forward pass on an autodiff module that no backward trains", e.span().clone(), label)
        .help(format!("make `{field}` untracked where the struct is built (`.no_grad()`), or keep it on the inner backend (`.valid()`)"))
        .note("burn sweeps only the graphs that hang on parameters some backward uses; a cut after the forward comes too late, so every step's graph of this module stays in the store");
    add_places(&mut report, f, Some(e), "the forward pass inside the call");
    cx.report(report);
}

/// A call that runs a forward on an autodiff model and keeps its outputs in its receiver for good.
fn report_kept(f: &FnModel, cx: &mut Context<'_>, e: &crate::model::VocabCall, field: &str) {
    let callee = e.via().unwrap_or("the call");
    let mut report = Report::new(
        "forward pass on an autodiff model whose outputs are kept and never backpropagated",
        e.span().clone(),
        format!("`{callee}` keeps a forward pass's graph-carrying output in `{field}`"),
    )
    .help(format!("keep host values in `{field}` (`.into_scalar()`, `.into_data()`), or run that forward on `model.valid()`"))
    .note("no backward consumes these graphs and each kept value holds its own, so burn's store keeps every call's graph for as long as the receiver lives");
    add_places(&mut report, f, Some(e), "the forward pass inside the call");
    cx.report(report);
}

/// A forward pass in a closure that a crate function calls in a loop without backward.
fn report_closure(f: &FnModel, cx: &mut Context<'_>, e: &crate::model::VocabCall, by: &str) {
    let label = match e.via() {
        Some(callee) => format!("`{callee}` runs a forward pass on an autodiff model"),
        None => "forward pass on an autodiff model".to_string(),
    };
    let mut report = Report::new(
        format!("forward pass on an autodiff model in a closure that `{by}` calls in a loop without backward"),
        e.span().clone(),
        label,
    )
    .help("hand the closure a model made with `model.valid()` (the inner backend)")
    .note(
        "burn sweeps its autodiff graph store only inside `backward()`; forwards without one grow it every iteration",
    );
    add_places(&mut report, f, Some(e), "the forward pass inside the call");
    cx.report(report);
}

/// A call of a model method that loops over forward passes (`model.sample(n)`) where no backward
/// follows.
fn report_sampler(f: &FnModel, cx: &mut Context<'_>, e: &crate::model::VocabCall) {
    let callee = e.via().unwrap_or("the model method");
    let mut report = Report::new(
        "forward passes on an autodiff model in a sampling loop that no backward follows",
        e.span().clone(),
        format!("`{callee}` runs forward passes in a loop of its own"),
    )
    .help("sample with `model.valid()` (the inner backend)")
    .note("burn sweeps its autodiff graph store only inside `backward()`: every step of the loop keeps its graph state, chained through the value it feeds back");
    add_places(&mut report, f, Some(e), "the forward pass inside the loop");
    cx.report(report);
}

/// The places a finding's notes name: where its forward pass runs inside a call (`forward`,
/// said as `what`), and the calls that instantiate the function with an autodiff backend.
/// Where a forward inside a called function runs (`what`), after the call in that function
/// through which it gets there, when it is not the function's own.
fn push_forward(
    report: &mut Report,
    via: Option<(&std::path::Path, usize)>,
    forward: Option<(&std::path::Path, usize)>,
    what: &str,
) {
    let Some((path, line)) = forward else { return };
    if let Some((via_path, via_line)) = via {
        report.elsewhere.push((
            via_path.to_path_buf(),
            via_line,
            "the call inside it that leads to the forward pass".to_string(),
        ));
    }
    report.elsewhere.push((path.to_path_buf(), line, what.to_string()));
}

fn add_places(report: &mut Report, f: &FnModel, e: Option<&crate::model::VocabCall>, what: &str) {
    if let Some(e) = e {
        push_forward(report, e.forward_via(), e.forward_at(), what);
    }
    if let Some((path, line, caller)) = f.autodiff_from() {
        report.elsewhere.push((
            path.clone(),
            *line,
            format!("`{caller}` calls this function with an autodiff backend"),
        ));
        for (path, line, caller) in f.autodiff_also() {
            report.elsewhere.push((path.clone(), *line, format!("so does `{caller}`")));
        }
    }
}

/// The most iterations a literally bounded loop of a test may run and still be left alone: a
/// test ends, and a few hundred forward passes of a test-sized model are small (a 64-step
/// priming loop before the test's updates, 30 passes to settle batch-norm statistics). Tests
/// that run thousands (timing loops) are still reported.
pub(crate) const TEST_LOOP_MAX: u64 = 256;

/// The most iterations a literally bounded loop nested in a training iteration may run and be
/// left alone: its forward passes are swept by the iteration's backward. The same handful as a
/// warm-up's short wait (`SHORT_WAIT_MAX`): at most that many forwards wait for a backward.
const SWEPT_LOOP_MAX: u64 = 32;

/// A forward pass of a finding: where, and its label.
type Call<'a> = (&'a Span, String, Option<(&'a std::path::Path, usize)>, Option<(&'a std::path::Path, usize)>);

/// How the loop of a forward pass stands to the backward passes of its function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// No backward in the function's iterations at all.
    NoBackward,
    /// A backward that runs only on some iterations (after a warm-up).
    Conditional,
    /// A rollout nested in a training iteration: outputs leave it as host data.
    Rollout,
    /// The training loop's own forward while its backward waits for a collection to fill.
    WarmUp,
    /// A loop whose backward a `bool` parameter turns off, called with it off (validation).
    ParamOff,
    /// A loop whose backward and forward sit on the two sides of an `if` on a setting
    /// (`config.dry_run`): on runs with the forward's side, no backward.
    SettingOff,
    /// A forward in the outer loop of a training loop whose output only leaves as host data (a
    /// validation pass once an epoch): the backward runs in the inner loop, on other forwards.
    Orphan,
}

/// Whether forward `e`, in training iteration `it`, is one no backward reaches: only host data
/// leaves it. Not a call of the crate that runs its own backward (`agent.learn()`), one that
/// keeps its outputs in its receiver (on-policy agents), or a model's sampler (judged as one).
fn orphaned(f: &FnModel, e: &crate::model::VocabCall, it: Iteration) -> bool {
    !e.kept_by_receiver()
        && !e.samples()
        && !f.training_calls().iter().any(|c| c.span() == e.span())
        && f.forward_orphaned(e, it)
}

/// Whether a loop inside `outer` runs a backward after forward `e` in the same iteration of
/// `outer` (`loop { let a = agent.act(&obs); .. for agent in &mut learners { agent.learn(..) }
/// }`): that backward sweeps the forward's graph before the next iteration.
fn swept_later_in(f: &FnModel, e: &crate::model::VocabCall, outer: LoopId) -> bool {
    f.training_calls().iter().any(|c| {
        matches!(c.kind(), TrainingCallKind::Backward | TrainingCallKind::BackwardStep)
            && c.span().start >= e.span().end
            && c.in_loop().is_some_and(|cl| cl != outer && f.loop_within(Some(cl), outer))
    })
}

/// The backward calls (direct or through a called function) of training iteration `it`.
fn backwards_of(f: &FnModel, it: Iteration) -> Vec<&TrainingCall> {
    f.training_calls()
        .iter()
        .filter(|c| {
            matches!(c.kind(), TrainingCallKind::Backward | TrainingCallKind::BackwardStep)
                && f.iteration_of(c.in_loop()) == Some(it)
        })
        .collect()
}

/// Whether code at byte `start` (in loop `l`, if any) runs after every backward of the function
/// body (direct or through a called function) has run, and no backward runs after it: nothing
/// calls the function once per training step, and no loop around it runs a backward again.
fn after_every_backward(f: &FnModel, start: usize, l: Option<LoopId>) -> bool {
    f.per_step_from().is_none()
        && f.training_calls()
            .iter()
            .filter(|c| matches!(c.kind(), TrainingCallKind::Backward | TrainingCallKind::BackwardStep))
            .all(|c| {
                c.span().end <= start && c.in_loop().is_none_or(|cl| l.is_none_or(|l| !f.loop_within(Some(l), cl)))
            })
}

/// Whether some backward of loop `outer` (in it or in a loop nested in it) runs without waiting
/// for a warm-up.
fn sweeps_every_iteration(f: &FnModel, outer: LoopId) -> bool {
    f.training_calls().iter().any(|c| {
        matches!(c.kind(), TrainingCallKind::Backward | TrainingCallKind::BackwardStep)
            && f.loop_within(c.in_loop(), outer)
            && !c.waits_for_size()
    })
}

/// Whether forward `e` runs on the element of loop `l` (nested directly in `outer`) that its
/// pattern binds: each iteration runs another model of a collection, once.
fn walks_models(f: &FnModel, e: &crate::model::VocabCall, l: LoopId, outer: LoopId) -> bool {
    f.loop_parent(l) == Some(outer)
        && e.receiver().and_then(|r| f.receiver_binding(r)).is_some_and(|b| f.bound_by_loop_pattern(l, b))
}

/// Whether the value a forward-running call is made on lives across the iterations of loop `l`
/// (`agent` of `agent.act(obs)`, declared before the loop; `self`).
fn receiver_outlives(f: &FnModel, e: &crate::model::VocabCall, l: LoopId) -> bool {
    match e.receiver() {
        None => true,
        Some(r) => f.receiver_binding(r).is_some_and(|b| f.outlives(b, Iteration::Loop(l))),
    }
}

/// Whether loop `l` hands a graph-carrying value out of its iterations (a recurrent state,
/// collected outputs, values yielded by an iterator closure).
fn threads_graph_out(f: &FnModel, l: LoopId) -> bool {
    stores_graph_past(f, l, &[Store::Assign, Store::Push, Store::Fold, Store::Yield])
}

/// Whether loop `l` stores a graph-carrying value made in it, in one of the ways `hows`, into a
/// binding that outlives its iterations.
fn stores_graph_past(f: &FnModel, l: LoopId, hows: &[Store]) -> bool {
    f.stores().any(|(_, value, target, how, _)| {
        hows.contains(&how)
            && f.taint(value).has(Taint::GRAPH)
            && f.loop_within(f.loop_of(value), l)
            && f.binding_of(target).is_some_and(|b| f.outlives(b, Iteration::Loop(l)))
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::count;

    const FAILS: &str = r#"
use burn::tensor::backend::AutodiffBackend;
fn rollout<B: AutodiffBackend>(model: &Net<B>, xs: Vec<Tensor<B, 2>>) -> Vec<f32> {
    let mut out = Vec::new();
    for x in xs {
        let y = model.forward(x);
        out.push(y.into_scalar());
    }
    out
}
"#;

    const PASSES: &str = r#"
use burn::tensor::backend::AutodiffBackend;
fn rollout<B: AutodiffBackend>(model: &Net<B>, xs: Vec<Tensor<B, 2>>) -> Vec<f32> {
    let model = model.valid();
    let mut out = Vec::new();
    for x in xs {
        let y = model.forward(x.inner());
        out.push(y.into_scalar());
    }
    out
}
"#;

    #[test]
    fn reports_the_leak() {
        assert_eq!(count("autodiff_forward_without_backward", None, FAILS), 1);
    }

    #[test]
    fn accepts_the_fixed_code() {
        assert_eq!(count("autodiff_forward_without_backward", None, PASSES), 0);
    }

    /// burn has no `xs.apply(&net)`: a method of that name is the crate's own, here a geometric
    /// map on host numbers in an evaluation closure beside the autodiff model.
    #[test]
    fn a_crate_method_named_apply_is_no_forward_in_burn() {
        let src = r#"
use burn::tensor::backend::AutodiffBackend;
pub struct Relation { rotation: f32 }
impl Relation {
    pub fn apply(&self, s: &Sector) -> Sector { Sector { angle: s.angle + self.rotation } }
}
pub struct Sector { angle: f32 }
fn evaluate<B: AutodiffBackend>(model: &Net<B>, triples: &[(usize, usize, usize)]) -> f32 {
    let (entities, relations) = to_geometry(model);
    let mut total = 0.0;
    for &(h, r, t) in triples {
        let moved = relations[r].apply(&entities[h]);
        total += (moved.angle - entities[t].angle).abs();
    }
    total
}
"#;
        assert_eq!(count("autodiff_forward_without_backward", None, src), 0);
        // The model's own forward in that loop is still one.
        let forward = src.replace(
            "let moved = relations[r].apply(&entities[h]);",
            "let moved = relations[r].apply(&entities[h]);\n        total += model.forward(x(h)).into_scalar();",
        );
        assert_eq!(count("autodiff_forward_without_backward", None, &forward), 1);
    }

    /// The backend is named by a local's annotation, not by the function's signature.
    const ANNOTATED_LOCAL: &str = r#"
use burn::backend::{Autodiff, NdArray};
fn main() {
    let device = Default::default();
    let model: QNet<Autodiff<NdArray>> = QNet::new(&device);
    let mut state = reset();
    for _ in 0..1000 {
        let q = model.forward(state.clone());
        state = step(q.argmax(1).into_scalar());
    }
}
"#;

    /// A rollout on the autodiff model whose backward waits for a warm-up of transitions.
    const WARM_UP: &str = r#"
use burn::tensor::backend::AutodiffBackend;
fn train<B: AutodiffBackend>(agent: &mut Agent<B>, env: &mut Env, episodes: usize) {
    for _ in 0..episodes {
        let mut state = env.reset();
        for _ in 0..200 {
            let q = agent.model.forward(state.clone());
            state = env.step(q.argmax(1).into_scalar());
            agent.buffer.push(state.clone());
        }
        if agent.buffer.len() > 2_000 {
            let loss = agent.loss();
            let grads = loss.backward();
            agent.model = agent.optim.step(1e-3, agent.model.clone(), GradientsParams::from_grads(grads, &agent.model));
        }
    }
}
"#;

    const TOGETHER: &str = r#"
use burn::tensor::backend::AutodiffBackend;
fn train<B: AutodiffBackend>(agent: &mut Agent<B>, env: &mut Env, episodes: usize) {
    for _ in 0..episodes {
        if agent.ready() {
            let mut state = env.reset();
            for _ in 0..200 {
                let q = agent.model.forward(state.clone());
                state = env.step(q.argmax(1).into_scalar());
            }
            let grads = agent.loss().backward();
            agent.model = agent.optim.step(1e-3, agent.model.clone(), GradientsParams::from_grads(grads, &agent.model));
        }
    }
}
"#;

    #[test]
    fn reports_forwards_while_backward_waits_for_a_warm_up() {
        assert_eq!(count("autodiff_forward_without_backward", None, WARM_UP), 1);
    }

    #[test]
    fn reports_rollouts_whose_outputs_no_backward_reaches() {
        // Backward every episode, or under the rollout's own condition: the rollout's outputs
        // leave each step as host data, so its graph state only waits for that backward.
        let every = WARM_UP.replace("if agent.buffer.len() > 2_000 {", "{");
        let text = crate::rules::testing::messages("autodiff_forward_without_backward", &every);
        assert_eq!(text.len(), 1, "{text:?}");
        assert!(text[0].contains("rollout whose outputs no backward reaches"), "{text:?}");
        assert_eq!(count("autodiff_forward_without_backward", None, TOGETHER), 1);
    }

    /// An unrolled recurrent computation: its outputs feed the loss that backward runs through.
    const UNROLLED: &str = r#"
use burn::tensor::backend::AutodiffBackend;
fn fit<B: AutodiffBackend>(cell: &Cell<B>, optim: &mut O, seqs: Vec<Vec<Tensor<B, 2>>>, h0: Tensor<B, 2>) {
    for seq in seqs {
        let mut h = h0.clone();
        for x in seq {
            h = cell.forward(x, h);
        }
        let loss = h.powf_scalar(2.0).mean();
        let grads = loss.backward();
        *cell = optim.step(1e-3, cell.clone(), GradientsParams::from_grads(grads, cell));
    }
}
"#;

    #[test]
    fn accepts_an_unrolled_computation_that_reaches_the_backward() {
        assert_eq!(count("autodiff_forward_without_backward", None, UNROLLED), 0);
    }

    /// The training loop itself skips backward on a non-finite loss: a guard, not a warm-up.
    const GUARDED: &str = r#"
use burn::tensor::backend::AutodiffBackend;
fn fit<B: AutodiffBackend>(model: &mut Net<B>, optim: &mut O, batches: Vec<(Tensor<B, 2>, Tensor<B, 2>)>) {
    for (x, y) in batches {
        let loss = (model.forward(x) - y).powf_scalar(2.0).mean();
        let value = loss.clone().into_scalar();
        if value.is_finite() {
            let grads = loss.backward();
            *model = optim.step(1e-3, model.clone(), GradientsParams::from_grads(grads, &*model));
        }
    }
}
"#;

    #[test]
    fn accepts_a_backward_skipped_by_a_guard_in_the_same_loop() {
        assert_eq!(count("autodiff_forward_without_backward", None, GUARDED), 0);
    }

    /// A helper generic over any backend runs the forward; the autodiff caller hands it the
    /// autodiff model.
    const GENERIC_HELPER: &str = r#"
use burn::tensor::backend::{AutodiffBackend, Backend};
impl<B: Backend> QNet<B> {
    fn act(&self, state: Tensor<B, 1>) -> usize {
        self.forward(state).argmax(0).into_scalar().to_usize()
    }
}
fn play<B: Backend>(net: &QNet<B>, env: &mut Env) {
    let mut state = env.reset();
    while !env.done() {
        state = env.step(net.act(state.clone()));
    }
}
fn rollout<B: AutodiffBackend>(net: &QNet<B>, env: &mut Env, steps: usize) {
    let mut state = env.reset();
    for _ in 0..steps {
        state = env.step(net.act(state.clone()));
    }
    play(&net.valid(), env);
}
"#;

    #[test]
    fn reports_a_generic_helper_given_the_autodiff_model() {
        // `rollout` is reported (its loop calls `act` on the autodiff model); `play` is generic
        // and is handed the inert `net.valid()`.
        assert_eq!(count("autodiff_forward_without_backward", None, GENERIC_HELPER), 1);
        let inner = GENERIC_HELPER
            .replace("net.act(state.clone()));\n    }\n    play", "net.valid().act(state.clone()));\n    }\n    play");
        assert_ne!(inner, GENERIC_HELPER);
        assert_eq!(count("autodiff_forward_without_backward", None, &inner), 0);
    }

    #[test]
    fn reports_a_local_annotated_with_an_autodiff_backend() {
        assert_eq!(count("autodiff_forward_without_backward", None, ANNOTATED_LOCAL), 1);
        let inner = ANNOTATED_LOCAL.replace("QNet<Autodiff<NdArray>>", "QNet<NdArray>");
        assert_eq!(count("autodiff_forward_without_backward", None, &inner), 0);
        // Older burn's name for the same backend.
        let old = ANNOTATED_LOCAL
            .replace("use burn::backend::{Autodiff, NdArray};", "use burn_autodiff::ADBackendDecorator;")
            .replace("QNet<Autodiff<NdArray>>", "QNet<ADBackendDecorator<NdArray>>");
        assert_eq!(count("autodiff_forward_without_backward", None, &old), 1);
    }

    /// A generic rollout instantiated with an autodiff backend by its caller, named through a
    /// crate type alias.
    const INSTANTIATED: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
type TrainingBackend = Autodiff<NdArray>;
fn collect<B: Backend>(model: &Net<B>, env: &mut Env, steps: usize) -> Vec<f32> {
    let mut out = Vec::new();
    for _ in 0..steps {
        let y = model.forward(env.obs());
        out.push(y.into_scalar());
    }
    out
}
fn main() {
    let model: Net<TrainingBackend> = Net::new();
    let mut env = Env::new();
    let rewards = collect(&model, &mut env, 1000);
}
"#;

    #[test]
    fn reports_a_generic_rollout_an_autodiff_caller_instantiates() {
        assert_eq!(count("autodiff_forward_without_backward", None, INSTANTIATED), 1);
        let inner =
            INSTANTIATED.replace("type TrainingBackend = Autodiff<NdArray>;", "type TrainingBackend = NdArray;");
        assert_eq!(count("autodiff_forward_without_backward", None, &inner), 0);
        let valid = INSTANTIATED.replace("collect(&model,", "collect(&model.valid(),");
        assert_eq!(count("autodiff_forward_without_backward", None, &valid), 0); // A short alias (`type Ad = Autodiff<Cuda>;`) is an alias too; two capitals (`AD`)
        // read as a generic parameter and are not trusted.
        let short = INSTANTIATED.replace("TrainingBackend", "Ad");
        assert_eq!(count("autodiff_forward_without_backward", None, &short), 1);
        // Two capitals (`AD`) or one letter read as a generic parameter in a crate-wide list of
        // names, but an alias of the same module is that module's type: `AD` is autodiff here.
        let caps = INSTANTIATED.replace("TrainingBackend", "AD");
        assert_eq!(count("autodiff_forward_without_backward", None, &caps), 1);
        let letter = INSTANTIATED
            .replace("TrainingBackend", "B")
            .replace("fn collect<B: Backend>(model: &Net<B>", "fn collect<T: Backend>(model: &Net<T>");
        assert_ne!(letter, INSTANTIATED.replace("TrainingBackend", "B"));
        assert_eq!(count("autodiff_forward_without_backward", None, &letter), 1);
        // Only a test instantiates it: the test runs once and ends.
        let test_only = INSTANTIATED.replace("fn main() {", "#[test]\nfn collects() {");
        assert_ne!(test_only, INSTANTIATED);
        assert_eq!(count("autodiff_forward_without_backward", None, &test_only), 0);
    }

    /// A module alias `B` and a function whose own type parameter `B` shadows it.
    const SHADOWED: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
type B = Autodiff<NdArray>;
fn evaluate<B: Backend>(model: &Net<B>, batches: Vec<Tensor<B, 2>>) -> f32 {
    let mut total = 0.0;
    for x in batches {
        total += model.forward(x).into_scalar();
    }
    total
}
fn main() {
    let model: Net<NdArray> = Net::new();
    evaluate(&model, load());
}
"#;

    #[test]
    fn a_type_parameter_shadows_a_module_alias() {
        assert_eq!(count("autodiff_forward_without_backward", None, SHADOWED), 0);
        let unshadowed = SHADOWED.replace(
            "fn evaluate<B: Backend>(model: &Net<B>, batches: Vec<Tensor<B, 2>>)",
            "fn evaluate(model: &Net<B>, batches: Vec<Tensor<B, 2>>)",
        );
        assert_ne!(unshadowed, SHADOWED);
        assert_eq!(count("autodiff_forward_without_backward", None, &unshadowed), 1);
    }

    /// Validation on the autodiff model once per epoch, in a generic helper whose parameter has
    /// one declaration per cargo feature.
    const CFG_PARAMS: &str = r#"
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::optim::GradientsParams;
pub fn training_loop<B: AutodiffBackend>(mut model: Vae<B>, train: Loader<B>, test: Loader<B>, epochs: usize) {
    let mut optimizer = AdamConfig::new().init();
    for epoch in 0..epochs {
        for batch in train.iter() {
            let loss = model.forward(batch.clone()).mean();
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optimizer.step(1e-3, model, grads);
        }
        let val_loss = validate(&model, test.clone());
        println!("{epoch} {val_loss}");
    }
}
pub fn validate<B: Backend>(
    #[cfg(feature = "dense")] model: &Vae<B>,
    #[cfg(feature = "conv")] model: &ConvVae<B>,
    loader: Loader<B>,
) -> f64 {
    let mut total = 0.0;
    for batch in loader.iter() {
        total += model.forward(batch).mean().into_scalar().elem::<f64>();
    }
    total
}
"#;

    #[test]
    fn reads_feature_alternatives_of_a_parameter_as_one() {
        assert_eq!(count("autodiff_forward_without_backward", None, CFG_PARAMS), 1);
        let valid = CFG_PARAMS.replace("validate(&model,", "validate(&model.valid(),");
        assert_eq!(count("autodiff_forward_without_backward", None, &valid), 0);
    }

    /// The backward runs inside the learner's `train_step` (the crate's `TrainStep::step`); a
    /// preview forward every N steps is swept by the next batch's backward.
    const LEARNER_STEP: &str = r#"
use burn::tensor::backend::AutodiffBackend;
fn fit<B: AutodiffBackend>(learner: &mut Learner<B>, batches: Vec<Batch<B>>, every: usize) {
    for (i, batch) in batches.into_iter().enumerate() {
        let out = learner.train_step(batch);
        learner.optimizer_step(out.grads);
        if i % every == 0 {
            let preview = learner.model().generator.forward(sample());
            save(preview.into_data());
        }
    }
}
"#;

    #[test]
    fn a_learner_train_step_runs_backward() {
        assert_eq!(count("autodiff_forward_without_backward", None, LEARNER_STEP), 0);
        let no_step = LEARNER_STEP.replace("learner.train_step(batch)", "learner.predict(batch)");
        assert_eq!(count("autodiff_forward_without_backward", None, &no_step), 1);
    }

    /// The only autodiff instantiation is a turbofish inside a format macro's arguments.
    const TURBOFISH_IN_PRINTLN: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
type TrainB = Autodiff<NdArray>;
fn sample<B: Backend>(model: &Net<B>, steps: usize) -> Vec<f32> {
    let mut out = Vec::new();
    for _ in 0..steps {
        out.push(model.forward(prompt()).into_scalar());
    }
    out
}
fn main() {
    let model = load();
    println!("{:?}", sample::<TrainB>(&model, 25));
}
"#;

    #[test]
    fn follows_a_turbofish_call_inside_println() {
        assert_eq!(count("autodiff_forward_without_backward", None, TURBOFISH_IN_PRINTLN), 1);
        let inner = TURBOFISH_IN_PRINTLN.replace("sample::<TrainB>", "sample::<NdArray>");
        assert_eq!(count("autodiff_forward_without_backward", None, &inner), 0);
    }

    /// Two calls instantiate the sampler with the autodiff backend: one every epoch of training,
    /// one after it. The finding names the one inside training first, then the other.
    #[test]
    fn names_the_instantiating_call_inside_training_first() {
        let both = TURBOFISH_IN_PRINTLN.replace(
            "fn main() {",
            "fn train(model: &mut Net<TrainB>, opt: &mut Adam, data: &[Batch]) {
    for epoch in 0..10 {
        for batch in data {
            let grads = model.forward(batch.x.clone()).backward();
            step(opt, model, grads);
        }
        println!(\"{epoch}: {:?}\", sample::<TrainB>(model, 25));
    }
}
fn main() {",
        );
        assert_ne!(both, TURBOFISH_IN_PRINTLN);
        let notes = crate::rules::testing::elsewhere("autodiff_forward_without_backward", &both);
        let lines: Vec<usize> = notes.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, [18, 23], "{notes:?}");
        assert_eq!(notes[0].1, "`train` calls this function with an autodiff backend");
        assert_eq!(notes[1].1, "so does `main`");
    }

    /// Data made with an explicit autodiff backend, handed on through `Result` adapters
    /// (`.map_err(..)?`), instantiates the generic trainer it is passed to; the trainer's own
    /// `step` method (three arguments, like burn's optimizer step) is a call of the crate.
    const MADE_THEN_MAPPED: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::tensor::{backend::Backend, Tensor};
pub struct Trainer<B: Backend> { device: B::Device }
impl<B: Backend> Trainer<B> {
    pub fn new(device: B::Device) -> Self { Self { device } }
    pub fn step(&self, model: &Net<B>, x: Tensor<B, 2>, y: Tensor<B, 2>) -> f64 {
        let out = model.forward(x);
        (out - y).powf_scalar(2.0).mean().into_scalar().elem::<f64>()
    }
}
fn prep<B: Backend>(device: &B::Device) -> Result<(Tensor<B, 2>, Tensor<B, 2>), String> {
    Ok((Tensor::zeros([4, 4], device), Tensor::zeros([4, 4], device)))
}
fn train<B: Backend>(x: Tensor<B, 2>, y: Tensor<B, 2>, device: &B::Device) -> f64 {
    let model: Net<B> = Net::new(device);
    let trainer = Trainer::new(device.clone());
    let mut total = 0.0;
    for _ in 0..100 {
        total += trainer.step(&model, x.clone(), y.clone());
    }
    total
}
fn main() -> Result<(), String> {
    type Train = Autodiff<NdArray>;
    let device = Default::default();
    let (x, y) = prep::<Train>(&device).map_err(|e| format!("data: {e}"))?;
    println!("{}", train(x, y, &device));
    Ok(())
}
"#;

    #[test]
    fn follows_data_made_for_an_autodiff_backend_into_a_crate_trainer_step() {
        assert_eq!(count("autodiff_forward_without_backward", None, MADE_THEN_MAPPED), 1);
        // The same data on the plain backend: nothing records a graph.
        let plain = MADE_THEN_MAPPED.replace("prep::<Train>", "prep::<NdArray>");
        assert_ne!(plain, MADE_THEN_MAPPED);
        assert_eq!(count("autodiff_forward_without_backward", None, &plain), 0);
        // A `step` on a type the crate gives no `step` method is burn's optimizer step: the
        // loop's call is not the crate's method, so no forward pass is seen in it.
        let foreign = MADE_THEN_MAPPED.replace("impl<B: Backend> Trainer<B> {", "impl<B: Backend> Helper<B> {");
        assert_ne!(foreign, MADE_THEN_MAPPED);
        assert_eq!(count("autodiff_forward_without_backward", None, &foreign), 0);
    }

    /// A validation loop on `model.valid()` whose loss module is made in place: the loss
    /// module's forward records only what its inputs record (burn's own example shape).
    const INLINE_LOSS: &str = r#"
use burn::tensor::backend::AutodiffBackend;
use burn::nn::loss::CrossEntropyLoss;
fn run<B: AutodiffBackend>(mut model: Net<B>, train: &[Batch<B>], valid: &[Batch<B>], optim: &mut Adam) {
    for epoch in 0..10 {
        for batch in train {
            let output = model.forward(batch.images.clone());
            let loss = CrossEntropyLoss::new(None, &output.device()).forward(output, batch.targets.clone());
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optim.step(1e-3, model, grads);
        }
        let model_valid = model.valid();
        for batch in valid {
            let output = model_valid.forward(batch.images.clone());
            let loss = CrossEntropyLoss::new(None, &output.device()).forward(output, batch.targets.clone());
            println!("{epoch}: {}", loss.into_scalar());
        }
    }
}
"#;

    #[test]
    fn a_loss_module_made_in_place_is_not_a_model_forward() {
        assert_eq!(count("autodiff_forward_without_backward", None, INLINE_LOSS), 0);
        // Validating on the autodiff model itself: its forward is reported, not the loss's.
        let tracked = INLINE_LOSS.replace("let model_valid = model.valid();", "let model_valid = &model;");
        assert_ne!(tracked, INLINE_LOSS);
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &tracked), [14]);
        // The validation loop itself never runs backward; the epoch loop around it does, elsewhere.
        assert_eq!(
            crate::rules::testing::messages("autodiff_forward_without_backward", &tracked),
            ["forward pass on an autodiff model in a loop without backward"]
        );
    }

    /// A function with no type parameters runs on the backends its own types name: an autodiff
    /// caller does not make its forward passes autodiff (a hand-written trainer called from a
    /// `Learner` strategy whose signature names the autodiff backend).
    const CONCRETE_CALLEE: &str = r#"
use burn::backend::{Autodiff, NdArray};
type Train = Autodiff<NdArray>;
pub struct Trainer { model: CudaGpt }
impl Trainer {
    pub fn run_step(&mut self, batch: &Tokens) -> f32 {
        let logits = self.model.forward(batch);
        self.model.manual_backward(&logits)
    }
}
fn run_training(components: Components<Train>, trainer: &mut Trainer, data: &[Tokens]) {
    for batch in data {
        trainer.run_step(batch);
    }
}
"#;

    #[test]
    fn an_autodiff_caller_does_not_make_a_concrete_callee_autodiff() {
        assert_eq!(count("autodiff_forward_without_backward", None, CONCRETE_CALLEE), 0);
        // The same helper generic over the backend: the caller's autodiff backend reaches it.
        let generic = CONCRETE_CALLEE
            .replace(
                "pub struct Trainer { model: CudaGpt }\nimpl Trainer {",
                "pub struct Trainer<B: Backend> { model: Gpt<B> }\nimpl<B: Backend> Trainer<B> {",
            )
            .replace("trainer: &mut Trainer,", "trainer: &mut Trainer<Train>,");
        assert_ne!(generic, CONCRETE_CALLEE);
        assert_eq!(count("autodiff_forward_without_backward", None, &generic), 1);
    }

    /// A model made for a plain backend alias (`init::<MyBackend>`) in a function that also
    /// names the autodiff one: the model records no graph. The autodiff alias is built on the
    /// plain one, as burn's examples write them.
    const PLAIN_ALIAS_MODEL: &str = r#"
use burn::backend::{Autodiff, Wgpu};
type MyBackend = Wgpu<f32>;
type MyAutodiffBackend = Autodiff<MyBackend>;
fn main() {
    let device = Default::default();
    let data = Dataset::<MyAutodiffBackend>::new(&device);
    for batch in data.iter() {
        let generator = config.generator.init::<MyBackend>(&device);
        let image = generator.forward(batch.lr.inner());
        save(image);
    }
}
"#;

    #[test]
    fn a_model_made_for_a_plain_backend_alias_records_no_graph() {
        assert_eq!(count("autodiff_forward_without_backward", None, PLAIN_ALIAS_MODEL), 0);
        let tracked = PLAIN_ALIAS_MODEL.replace("init::<MyBackend>", "init::<MyAutodiffBackend>");
        assert_ne!(tracked, PLAIN_ALIAS_MODEL);
        assert_eq!(count("autodiff_forward_without_backward", None, &tracked), 1);
        // An alias declared differently elsewhere in the crate (a `cfg` choosing autodiff) is
        // not known to be plain.
        let ambiguous = PLAIN_ALIAS_MODEL.replace(
            "type MyBackend = Wgpu<f32>;",
            "#[cfg(feature = \"wgpu\")]\ntype MyBackend = Wgpu<f32>;\n#[cfg(not(feature = \"wgpu\"))]\ntype MyBackend = Autodiff<Wgpu<f32>>;",
        );
        assert_ne!(ambiguous, PLAIN_ALIAS_MODEL);
        assert_eq!(count("autodiff_forward_without_backward", None, &ambiguous), 1);
    }

    /// A generic sampler called with a plain backend alias and, after training, with the
    /// autodiff one: the finding names only the autodiff call.
    #[test]
    fn a_call_with_a_plain_backend_alias_does_not_instantiate_autodiff() {
        let src = r#"
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
type Plain = NdArray<f32>;
type Train = Autodiff<Plain>;
fn sample<B: Backend>(model: &Net<B>, steps: usize) -> Vec<f32> {
    let mut out = Vec::new();
    for _ in 0..steps {
        out.push(model.forward(prompt()).into_scalar());
    }
    out
}
fn main() {
    let plain_model = load::<Plain>();
    println!("{:?}", sample::<Plain>(&plain_model, 25));
    let model = train::<Train>();
    println!("{:?}", sample::<Train>(&model, 25));
}
"#;
        let notes = crate::rules::testing::elsewhere("autodiff_forward_without_backward", src);
        assert_eq!(notes, [(17, "`main` calls this function with an autodiff backend".to_string())]);
        let only_plain = src.replace("sample::<Train>(&model, 25)", "0");
        assert_eq!(count("autodiff_forward_without_backward", None, &only_plain), 0);
    }

    /// A test that acts on a few literal inputs with an autodiff agent and ends.
    const TEST_OVER_LITERALS: &str = r#"
use burn::backend::{Autodiff, NdArray};
type B = Autodiff<NdArray>;
#[test]
fn greedy_and_deterministic_actions_agree() {
    let agent = Agent::<B>::new();
    for &x in &[-0.9, -0.3, 0.0, 0.25, 0.8] {
        let a = agent.policy.forward(obs(x));
        assert!(a.argmax(1).into_scalar() >= 0);
    }
}
"#;

    #[test]
    fn a_test_over_a_few_literal_inputs_is_left_alone() {
        assert_eq!(count("autodiff_forward_without_backward", None, TEST_OVER_LITERALS), 0);
        // Outside a test, five literal inputs are a handful of forwards, once; a thousand are
        // not, nor is data whose size the text does not fix.
        let not_test = TEST_OVER_LITERALS.replace("#[test]\n", "");
        assert_ne!(not_test, TEST_OVER_LITERALS);
        assert_eq!(count("autodiff_forward_without_backward", None, &not_test), 0);
        let long = not_test.replace("for &x in &[-0.9, -0.3, 0.0, 0.25, 0.8] {", "for x in 0..1000 {");
        assert_ne!(long, not_test);
        assert_eq!(count("autodiff_forward_without_backward", None, &long), 1);
        // Nor a short denoising loop that feeds each step's output to the next, here with its
        // bound in a local.
        let denoise = "use burn::backend::{Autodiff, NdArray};\ntype B = Autodiff<NdArray>;\nfn main() {\n    let model = Unet::<B>::new();\n    let steps = 20;\n    let mut x = noise::<B>();\n    for t in 0..steps {\n        x = model.forward(x, t);\n    }\n    save(x.into_data());\n}\n";
        assert_eq!(count("autodiff_forward_without_backward", None, denoise), 1);
        // Nor a few calls of a model's sampler, each a loop of its own.
        let sampler = "use burn::backend::{Autodiff, NdArray};\ntype B = Autodiff<NdArray>;\nimpl<B: Backend> Flow<B> {\n    pub fn sample(&self, n: usize, steps: usize) -> Tensor<B, 2> {\n        let mut x = noise::<B>(n);\n        for i in 0..steps {\n            x = x.clone() + self.forward(x, i);\n        }\n        x\n    }\n}\nfn main() {\n    let model = Flow::<B>::new();\n    for _ in 0..10 {\n        save(model.sample(1_000, 500).into_data());\n    }\n}\n";
        assert_eq!(count("autodiff_forward_without_backward", None, sampler), 1);
        // In the test, a loop over the fixture's data is left alone too; a long literal loop is not.
        let data =
            TEST_OVER_LITERALS.replace("for &x in &[-0.9, -0.3, 0.0, 0.25, 0.8] {", "for &x in &load_inputs() {");
        assert_ne!(data, TEST_OVER_LITERALS);
        assert_eq!(count("autodiff_forward_without_backward", None, &data), 0);
        let stress = TEST_OVER_LITERALS.replace("for &x in &[-0.9, -0.3, 0.0, 0.25, 0.8] {", "for x in 0..10_000 {");
        assert_eq!(count("autodiff_forward_without_backward", None, &stress), 1);
        // A helper of a `#[cfg(test)]` module with a literal range (a four-step fixture rollout).
        let helper = "#[cfg(test)]\nmod tests {\n    use super::*;\n    fn collect(agent: &Agent<B>) {\n        for i in 0..4usize {\n            agent.policy.forward(obs(i as f32));\n        }\n    }\n}\n";
        let fixture = format!("use burn::backend::{{Autodiff, NdArray}};\ntype B = Autodiff<NdArray>;\n{helper}");
        assert_eq!(count("autodiff_forward_without_backward", None, &fixture), 0);
        let long = fixture.replace("0..4usize", "0..4096usize");
        assert_eq!(count("autodiff_forward_without_backward", None, &long), 1);
        // A 64-step priming loop before the test's updates is small; a 2,000-step timing loop
        // on the autodiff model is not.
        let priming = fixture.replace("0..4usize", "0..64usize");
        assert_eq!(count("autodiff_forward_without_backward", None, &priming), 0);
        let timing = fixture.replace("0..4usize", "0..2000usize");
        assert_eq!(count("autodiff_forward_without_backward", None, &timing), 1);
    }

    /// A parameter typed by the module's inner module (`M::InnerModule`, what `valid()`
    /// returns) runs on the inner backend, like one typed `Net<B::InnerBackend>`.
    #[test]
    fn a_parameter_of_the_inner_module_type_records_no_graph() {
        let src = r#"
use burn::module::AutodiffModule;
use burn::tensor::backend::AutodiffBackend;
fn evaluate<B: AutodiffBackend, M: AutodiffModule<B>>(net: &M::InnerModule, envs: &mut [Env]) {
    for env in envs.iter_mut() {
        let q = net.forward(env.obs());
        env.step(q.argmax(1).into_scalar());
    }
}
"#;
        assert_eq!(count("autodiff_forward_without_backward", None, src), 0);
        let tracked = src.replace("net: &M::InnerModule", "net: &M");
        assert_ne!(tracked, src);
        assert_eq!(count("autodiff_forward_without_backward", None, &tracked), 1);
    }

    /// A method of a declared module (`#[derive(Module)]`) that runs its sub-layers over a few
    /// inputs and returns what they compute is part of a forward pass, whatever its name.
    #[test]
    fn a_declared_modules_method_that_returns_its_result_is_model_code() {
        let src = r#"
use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;
#[derive(Module, Debug)]
pub struct Memory<B: AutodiffBackend> {
    key_proj: Linear<B>,
}
impl<B: AutodiffBackend> Memory<B> {
    pub fn retrieve(&self, state: &State<B>, query: &Tensor<B, 3>) -> Tensor<B, 3> {
        let banks = [&state.short, &state.long, &state.episodic];
        let mut keys = Vec::new();
        for bank in &banks {
            keys.push(self.key_proj.forward((*bank).clone()));
        }
        attend(query, Tensor::cat(keys, 1))
    }
}
"#;
        assert_eq!(count("autodiff_forward_without_backward", None, src), 0);
        // Not a module's: its loop over the state's banks (as many as the state holds) is judged
        // here. Over the three banks of a local array, it is a handful of forwards per call.
        let plain_struct = src
            .replace("#[derive(Module, Debug)]", "#[derive(Debug)]")
            .replace("let banks = [&state.short, &state.long, &state.episodic];", "let banks = state.banks();");
        assert_ne!(plain_struct, src);
        assert_eq!(count("autodiff_forward_without_backward", None, &plain_struct), 1);
        let three = src.replace("#[derive(Module, Debug)]", "#[derive(Debug)]");
        assert_eq!(count("autodiff_forward_without_backward", None, &three), 0);
    }

    /// Explicit generic arguments instantiate the chain; the call is inside a crate macro.
    const TURBOFISH: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
type Train = Autodiff<NdArray>;
macro_rules! each_env {
    ($name:expr, $body:block) => { $body };
}
fn evaluate<B: Backend>(device: &B::Device) {
    let model: Net<B> = Net::new(device);
    each_env!("cartpole", { play::<B>(&model) });
}
fn play<B: Backend>(model: &Net<B>) {
    loop {
        let q = model.forward(obs());
        if done(q.argmax(1).into_scalar()) {
            break;
        }
    }
}
fn main() {
    evaluate::<Train>(&Default::default());
}
"#;

    #[test]
    fn follows_explicit_generic_arguments_through_crate_macros() {
        assert_eq!(count("autodiff_forward_without_backward", None, TURBOFISH), 1);
        let inner = TURBOFISH.replace("evaluate::<Train>", "evaluate::<NdArray>");
        assert_eq!(count("autodiff_forward_without_backward", None, &inner), 0);
    }

    /// A model's method that returns what its loop computed (a forward over its blocks) is part
    /// of its caller's step; a loss module's `forward` is not a model's.
    const RETURNS_GRAPH: &str = r#"
use burn::tensor::backend::AutodiffBackend;
impl<B: AutodiffBackend> Backbone<B> {
    fn forward_backbone(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        let mut x = x;
        for block in &self.blocks {
            x = block.forward(x);
        }
        self.out.forward(x)
    }
}
fn evaluate<B: AutodiffBackend>(model: &Net<B>, loss_fn: &MseLoss<B>, batches: Vec<(Tensor<B, 2>, Tensor<B, 2>)>) -> f32 {
    let mut total = 0.0;
    for (x, y) in batches {
        let pred = model.forward(x);
        let loss = loss_fn.forward(pred, y);
        total += loss.into_scalar();
    }
    total
}
"#;

    #[test]
    fn leaves_model_methods_to_their_callers_and_loss_modules_alone() {
        assert_eq!(count("autodiff_forward_without_backward", None, RETURNS_GRAPH), 1);
    }

    /// A method call on a value whose declared type is not the crate's (`Option<&Tokenizer>`
    /// unwrapped) does not reach a crate method of the same name.
    const FOREIGN_RECEIVER: &str = r#"
use burn::tensor::backend::AutodiffBackend;
impl<B: AutodiffBackend> Conditioner<B> {
    fn encode(&self, text: &str, pad: bool) -> Vec<u32> {
        self.net.forward(embed(text)).argmax(1).into_data().to_vec().unwrap()
    }
}
fn batch<B: AutodiffBackend>(texts: &[String], tokenizer: &Tokenizer, caption: Option<&Tokenizer>) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    for t in texts {
        let tok = caption.unwrap_or(tokenizer);
        out.push(tok.encode(t, false));
    }
    out
}
"#;

    #[test]
    fn does_not_resolve_calls_on_foreign_types_to_crate_methods() {
        assert_eq!(count("autodiff_forward_without_backward", None, FOREIGN_RECEIVER), 0);
        let own = FOREIGN_RECEIVER.replace("caption: Option<&Tokenizer>", "caption: Option<&Conditioner<B>>");
        assert_eq!(count("autodiff_forward_without_backward", None, &own), 1);
    }

    /// A model method that plays an episode and returns host data is a rollout.
    const MODEL_ROLLOUT: &str = r#"
use burn::tensor::backend::AutodiffBackend;
impl<B: AutodiffBackend> Dqn<B> {
    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.head.forward(self.body.forward(x))
    }
    fn play(&self, env: &mut Env) -> f32 {
        let mut reward = 0.0;
        while !env.done() {
            let q = self.forward(env.obs());
            reward += env.step(q.argmax(1).into_scalar());
        }
        reward
    }
}
"#;

    #[test]
    fn reports_a_model_method_that_plays_an_episode() {
        assert_eq!(count("autodiff_forward_without_backward", None, MODEL_ROLLOUT), 1);
    }

    /// A model loaded untracked (`.map(Module::no_grad)`) and handed to a helper stays inert in
    /// the helper; the autodiff student handed to the same kind of helper does not.
    const INERT_ACROSS_CALLS: &str = r#"
use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;
fn load_teacher<B: AutodiffBackend>(path: &str, device: &B::Device) -> Result<Net<B>> {
    load_net(path, device).map(Module::no_grad)
}
fn teacher_targets<B: AutodiffBackend>(teacher: &Net<B>, x: Tensor<B, 2>) -> Vec<f32> {
    teacher.forward(x).into_data().to_vec().unwrap()
}
fn evaluate<B: AutodiffBackend>(teacher: &Net<B>, batches: Vec<Tensor<B, 2>>) -> usize {
    let mut n = 0;
    for x in batches {
        let t = teacher_targets(teacher, x);
        n += t.len();
    }
    n
}
fn run<B: AutodiffBackend>(device: &B::Device, batches: Vec<Tensor<B, 2>>) -> Result<usize> {
    let teacher = load_teacher::<B>("teacher", device)?;
    Ok(evaluate(&teacher, batches))
}
"#;

    #[test]
    fn follows_inert_models_across_calls() {
        assert_eq!(count("autodiff_forward_without_backward", None, INERT_ACROSS_CALLS), 0);
        let tracked =
            INERT_ACROSS_CALLS.replace("load_net(path, device).map(Module::no_grad)", "load_net(path, device)");
        assert_eq!(count("autodiff_forward_without_backward", None, &tracked), 1);
    }

    /// The training loop acts on the autodiff model every step; its backward waits until the
    /// replay memory holds a batch.
    const WARM_UP_IN_LOOP: &str = r#"
use burn::tensor::backend::AutodiffBackend;
fn run<B: AutodiffBackend>(agent: &mut Agent<B>, env: &mut Env, memory: &mut Memory, steps: usize) {
    let mut state = env.reset();
    for _ in 0..steps {
        let q = agent.model.forward(state.clone());
        let next = env.step(q.argmax(1).into_scalar());
        memory.push(state, next.clone());
        state = next;
        if memory.len() > 1_000 {
            let grads = agent.loss(memory).backward();
            agent.model = agent.optim.step(1e-3, agent.model.clone(), GradientsParams::from_grads(grads, &agent.model));
        }
    }
}
"#;

    /// The same wait inside the agent's `observe`.
    const WARM_UP_IN_CALLEE: &str = r#"
use burn::tensor::backend::AutodiffBackend;
impl<B: AutodiffBackend> Agent<B> {
    fn observe(&mut self, t: Transition) {
        self.memory.push(t);
        if self.memory.len() >= self.min_replay {
            let grads = self.loss().backward();
            self.model = self.optim.step(1e-3, self.model.clone(), GradientsParams::from_grads(grads, &self.model));
        }
    }
}
fn run<B: AutodiffBackend>(agent: &mut Agent<B>, env: &mut Env, steps: usize) {
    let mut state = env.reset();
    for _ in 0..steps {
        let q = agent.model.forward(state.clone());
        let next = env.step(q.argmax(1).into_scalar());
        agent.observe(Transition::new(state, next.clone()));
        state = next;
    }
}
"#;

    #[test]
    fn reports_forwards_while_the_backward_waits_for_the_memory_to_fill() {
        let text = crate::rules::testing::messages("autodiff_forward_without_backward", WARM_UP_IN_LOOP);
        assert_eq!(text.len(), 1, "{text:?}");
        assert!(text[0].contains("warm-up"), "{text:?}");
        assert_eq!(count("autodiff_forward_without_backward", None, WARM_UP_IN_CALLEE), 1);
        // A backward skipped by a check of the loss is a guard, not a warm-up.
        let guard = WARM_UP_IN_LOOP.replace("if memory.len() > 1_000 {", "if loss_ok(memory) {");
        assert_ne!(guard, WARM_UP_IN_LOOP);
        assert_eq!(count("autodiff_forward_without_backward", None, &guard), 0);
        // A warm-up of one batch, written either way round: once, a batch long.
        for cond in ["if memory.len() >= batch_size {", "if config.batch_size < memory.len() {"] {
            let one_batch = WARM_UP_IN_LOOP.replace("if memory.len() > 1_000 {", cond);
            assert_ne!(one_batch, WARM_UP_IN_LOOP);
            assert_eq!(count("autodiff_forward_without_backward", None, &one_batch), 0, "{cond}");
        }
        // Not a count of batches.
        let batches = WARM_UP_IN_LOOP.replace("if memory.len() > 1_000 {", "if memory.len() > WARMUP_BATCHES {");
        assert_eq!(count("autodiff_forward_without_backward", None, &batches), 1);
        // Not when the memory must also pass a step count (`learning_starts`).
        let both = WARM_UP_IN_LOOP
            .replace("if memory.len() > 1_000 {", "if memory.len() >= batch_size && step >= learning_starts {");
        assert_eq!(count("autodiff_forward_without_backward", None, &both), 1);
    }

    /// A trainer whose `learn` returns early until its memory holds a warm-up, made by the crate's
    /// own `ModelConfig::init` with a backend named by a function-local alias.
    const EARLY_RETURN: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub struct Trainer<B: AutodiffBackend> {
    network: Net<B>,
    memory: Vec<Tensor<B, 1>>,
    warmup: usize,
}
impl<B: AutodiffBackend> Trainer<B> {
    pub fn learn(&mut self) {
        if self.memory.len() < self.warmup {
            return;
        }
        let grads = self.network.forward(self.batch()).backward();
        self.apply(grads);
    }
    pub fn pick_action(&self, x: Tensor<B, 1>) -> u32 {
        self.network.forward(x.unsqueeze()).argmax(1).into_scalar() as u32
    }
}
pub struct ModelConfig;
impl ModelConfig {
    pub fn init<B: AutodiffBackend>(&self, device: &B::Device) -> Trainer<B> {
        Trainer { network: Net::new(device), memory: Vec::new(), warmup: 10_000 }
    }
}
fn main() {
    type Backend = burn::backend::Autodiff<burn::backend::Wgpu>;
    let device = Default::default();
    let mut trainer = ModelConfig.init::<Backend>(&device);
    for step in 0..100_000u64 {
        let state = Tensor::<Backend, 1>::from_floats([0.0], &device);
        trainer.memory.push(state.clone());
        if step % 4 == 0 {
            trainer.learn();
        }
        let _action = trainer.pick_action(state);
    }
}
"#;

    #[test]
    fn an_early_return_on_a_length_is_a_warm_up() {
        let text = crate::rules::testing::messages("autodiff_forward_without_backward", EARLY_RETURN);
        assert_eq!(text.len(), 1, "{text:?}");
        assert!(text[0].contains("warm-up"), "{text:?}");
        // `init`'s `Trainer<B>` is the crate's to say: the `ModelConfig` → `Model` convention is
        // only a guess and does not hide the trainer's methods.
        assert!(EARLY_RETURN.contains("pub struct ModelConfig;"));
        // A length test that does not leave the function is no warm-up of what follows.
        let no_exit = EARLY_RETURN.replace("            return;\n", "            println!(\"small\");\n");
        assert_ne!(no_exit, EARLY_RETURN);
        assert_eq!(count("autodiff_forward_without_backward", None, &no_exit), 0);
        // A warm-up of one batch (`memory.len() < self.batch_size`) is a batch of forwards,
        // once: every later step's backward sweeps its own.
        let one_batch = EARLY_RETURN.replace("self.warmup", "self.batch_size").replace("warmup:", "batch_size:");
        assert_eq!(count("autodiff_forward_without_backward", None, &one_batch), 0);
        let as_const =
            EARLY_RETURN.replace("self.memory.len() < self.warmup", "self.memory.len() < BATCH_SIZE as usize");
        assert_ne!(as_const, EARLY_RETURN);
        assert_eq!(count("autodiff_forward_without_backward", None, &as_const), 0);
    }

    /// An on-policy rollout that trains whenever its buffer reaches the horizon (`==`).
    const HORIZON: &str = r#"
use burn::backend::{Autodiff, NdArray};
fn main() {
    let device = Default::default();
    let mut model: Ppo<Autodiff<NdArray>> = Ppo::new(device);
    for _episode in 0..1_000 {
        let mut done = false;
        while !done {
            let state: Tensor<Autodiff<NdArray>, 1> = Tensor::from_data(obs(), &device);
            let probs = model.pi(state).to_data();
            done = env_step(&probs);
            model.put_data(probs);
            if model.data.len() == 2048 {
                model.train_net();
            }
        }
    }
}
impl<B: AutodiffBackend> Ppo<B> {
    fn pi(&self, x: Tensor<B, 1>) -> Tensor<B, 1> {
        self.fc.forward(x)
    }
    fn train_net(&mut self) {
        let grads = self.loss().backward();
        self.step(grads);
    }
}
"#;

    #[test]
    fn a_backward_at_a_buffer_length_is_a_warm_up() {
        let text = crate::rules::testing::messages("autodiff_forward_without_backward", HORIZON);
        assert_eq!(text.len(), 1, "{text:?}");
        assert!(text[0].contains("warm-up"), "{text:?}");
        // A buffer of the crate that names its length `size()`.
        let size = HORIZON.replace("if model.data.len() == 2048 {", "if model.data.size() >= 2048 {");
        assert_ne!(size, HORIZON);
        let text = crate::rules::testing::messages("autodiff_forward_without_backward", &size);
        assert!(text.len() == 1 && text[0].contains("warm-up"), "{text:?}");
        // A modulo test is not a length: the backward runs on a schedule, no warm-up.
        let every = HORIZON.replace("if model.data.len() == 2048 {", "if step % 20 == 0 {");
        assert_eq!(count("autodiff_forward_without_backward", None, &every), 0);
        // A horizon of a handful of steps (a literal or a constant of at most 32): at most that
        // many forwards wait for each backward.
        for short in ["if model.data.len() == 20 {", "if model.data.len() >= T_HORIZON {"] {
            let src = HORIZON
                .replace("if model.data.len() == 2048 {", short)
                .replace("fn main() {", "const T_HORIZON: usize = 20;\nfn main() {");
            assert_eq!(count("autodiff_forward_without_backward", None, &src), 0, "{short}");
        }
        let long_const = HORIZON
            .replace("if model.data.len() == 2048 {", "if model.data.len() >= T_HORIZON {")
            .replace("fn main() {", "const T_HORIZON: usize = 2048;\nfn main() {");
        assert_eq!(count("autodiff_forward_without_backward", None, &long_const), 1);
    }

    /// One alias name, two modules, two backends: each module's own alias decides.
    const TWO_MODULES: &str = r#"
use burn::tensor::backend::Backend;
mod network_tests {
    type TestBackend = burn::backend::NdArray<f32>;
    fn batch_sizes() {
        let network = ActorCriticConfig::new(20, 20).init::<TestBackend>(&Default::default());
        for batch_size in [1, 4, 16, 32] {
            let (_logits, _value) = network.forward(Tensor::zeros([batch_size, 4], &Default::default()));
        }
    }
}
mod ppo_tests {
    type TestBackend = burn::backend::Autodiff<burn::backend::NdArray<f32>>;
    fn rollout() {
        let network = ActorCriticConfig::new(20, 20).init::<TestBackend>(&Default::default());
        for step in 0..800 {
            let (_logits, _value) = network.forward(Tensor::zeros([step, 4], &Default::default()));
        }
    }
}
"#;

    #[test]
    fn a_modules_own_alias_decides_its_backend() {
        let text = crate::rules::testing::messages("autodiff_forward_without_backward", TWO_MODULES);
        assert_eq!(text.len(), 1, "{text:?}");
        let lines = crate::rules::testing::lines("autodiff_forward_without_backward", TWO_MODULES);
        assert_eq!(lines, vec![17], "only ppo_tests' loop runs on an autodiff backend");
    }

    /// An agent whose `learn_step` returns early until `can_learn()` (a length comparison), built
    /// by a constructor whose struct literal holds an inert target network.
    const GATED: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub struct Agent<B: AutodiffBackend> {
    policy: Net<B>,
    target: Net<B::InnerBackend>,
    buffer: Vec<f32>,
    step: usize,
    config: Config,
}
impl<B: AutodiffBackend> Agent<B> {
    pub fn new(policy: Net<B>, config: Config) -> Result<Self, Error> {
        let target = policy.valid();
        Ok(Self { policy, target, buffer: Vec::new(), step: 0, config })
    }
    pub fn act(&self, obs: &Obs) -> usize {
        self.policy.forward(obs.tensor()).argmax(1).into_scalar() as usize
    }
    pub fn can_learn(&self) -> bool {
        self.buffer.len() >= self.config.batch_size && self.step >= self.config.learning_starts
    }
    pub fn learn_step(&mut self) -> Result<Option<f32>, Error> {
        if !self.can_learn() {
            return Ok(None);
        }
        let grads = self.policy.forward(self.batch()).mean().backward();
        self.apply(grads);
        Ok(Some(0.0))
    }
}
pub fn train<B: AutodiffBackend>(agent: &mut Agent<B>, env: &mut Env, steps: usize) -> Result<(), Error> {
    for _ in 0..steps {
        let action = agent.act(&env.obs());
        env.step(action);
        if let Some(loss) = agent.learn_step()? {
            println!("{loss}");
        }
    }
    Ok(())
}
"#;

    #[test]
    fn a_crate_function_that_compares_a_length_gates_the_backward() {
        let text = crate::rules::testing::messages("autodiff_forward_without_backward", GATED);
        assert_eq!(text.len(), 1, "{text:?}");
        assert!(text[0].contains("warm-up"), "{text:?}");
        // A gate that compares no length is no warm-up (a guard such as a finite loss).
        let finite = GATED.replace(
            "self.buffer.len() >= self.config.batch_size && self.step >= self.config.learning_starts",
            "self.loss_ok",
        );
        assert_ne!(finite, GATED);
        assert_eq!(count("autodiff_forward_without_backward", None, &finite), 0);
        // An `Option` that is `None` until the memory holds a batch gates it too.
        let sampled = GATED
            .replace(
                "        if !self.can_learn() {\n            return Ok(None);\n        }\n",
                "        let Some(batch) = self.sample() else {\n            return Ok(None);\n        };\n",
            )
            .replace(
                "    pub fn can_learn(&self) -> bool {",
                "    pub fn sample(&self) -> Option<Vec<f32>> {\n        if self.buffer.len() < self.config.learning_starts {\n            return None;\n        }\n        Some(self.buffer.clone())\n    }\n    pub fn can_learn(&self) -> bool {",
            );
        assert_eq!(count("autodiff_forward_without_backward", None, &sampled), 1);
        // `None` only until the memory holds one batch: a batch of forwards, once.
        let one_batch = sampled.replace(
            "if self.buffer.len() < self.config.learning_starts {",
            "if self.buffer.len() < self.config.batch_size {",
        );
        assert_ne!(one_batch, sampled);
        assert_eq!(count("autodiff_forward_without_backward", None, &one_batch), 0);
        // A sampler that hands on such an `Option` with `?` is one too (a prioritized memory
        // wrapping the plain one), also when both are named alike.
        let wrapped = sampled
            .replace("let Some(batch) = self.sample() else {", "let Some(batch) = self.sample_weighted() else {")
            .replace(
                "    pub fn can_learn(&self) -> bool {",
                "    pub fn sample_weighted(&self) -> Option<(Vec<f32>, f32)> {\n        let batch = self.sample()?;\n        Some((batch, 1.0))\n    }\n    pub fn can_learn(&self) -> bool {",
            );
        assert_ne!(wrapped, sampled);
        assert_eq!(count("autodiff_forward_without_backward", None, &wrapped), 1);
        // Handing on the `None` of a call that is no gate gates nothing.
        let ungated = wrapped.replace("let batch = self.sample()?;", "let batch = self.latest()?;");
        assert_eq!(count("autodiff_forward_without_backward", None, &ungated), 0);
        // The agent comes from a constructor whose struct literal holds `policy.valid()`: a
        // container with an inert field, not an inert model.
        let built = format!(
            "{GATED}\nfn main() -> Result<(), Error> {{\n    let mut agent = Agent::new(Net::new(), Config::default())?;\n    train(&mut agent, &mut Env::new(), 1_000)\n}}\n"
        );
        assert_eq!(count("autodiff_forward_without_backward", None, &built), 1);
    }

    #[test]
    fn a_forward_behind_the_gates_threshold_waits_with_it() {
        // `act` plays at random until the step the gate waits for: no forward in the warm-up.
        let random_first = GATED.replace(
            "    pub fn act(&self, obs: &Obs) -> usize {\n",
            "    pub fn act(&self, obs: &Obs) -> usize {\n        if self.step < self.config.learning_starts {\n            return random_action();\n        }\n",
        );
        assert_ne!(random_first, GATED);
        assert_eq!(count("autodiff_forward_without_backward", None, &random_first), 0);
        // An epsilon test compares another field: the forward still runs in the warm-up.
        let epsilon = GATED.replace(
            "    pub fn act(&self, obs: &Obs) -> usize {\n",
            "    pub fn act(&self, obs: &Obs) -> usize {\n        if self.roll < self.epsilon {\n            return random_action();\n        }\n",
        );
        assert_eq!(count("autodiff_forward_without_backward", None, &epsilon), 1);
    }

    /// A non-generic agent whose model fields are declared with an autodiff alias: the field
    /// types say the forwards record graphs, though no signature names a backend.
    const FIELD_TYPED: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::tensor::Tensor;
pub type Plain = NdArray<f32>;
pub type Train = Autodiff<Plain>;
pub struct Dqn {
    policy: Model<Train>,
    env: Env,
}
impl Dqn {
    fn propose_action(&self) -> i32 {
        self.policy.forward(Tensor::<Train, 1>::from(self.env.state)).argmax(0).into_scalar() as i32
    }
    fn update_model(&mut self) {
        let grads = self.policy.forward(self.batch()).mean().backward();
        self.apply(grads);
    }
    pub fn train(&mut self, episodes: usize) {
        for _ in 0..episodes {
            let mut finish = false;
            while !finish {
                finish = self.env.step(self.propose_action());
            }
            self.update_model();
        }
    }
}
"#;

    #[test]
    fn a_field_declared_with_an_autodiff_backend_records_graphs() {
        assert_eq!(count("autodiff_forward_without_backward", None, FIELD_TYPED), 1);
        // Declared on the plain backend: nothing is recorded.
        let plain = FIELD_TYPED.replace("    policy: Model<Train>,", "    policy: Model<Plain>,");
        assert_ne!(plain, FIELD_TYPED);
        assert_eq!(count("autodiff_forward_without_backward", None, &plain), 0);
        // A generic type whose parameter is named like the crate's autodiff alias: its fields
        // are on the parameter, not on the alias.
        let shadowed = r#"
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
pub type B = Autodiff<NdArray<f32>>;
pub struct Head<B: Backend> {
    layer: Linear<B>,
}
impl<B: Backend> Head<B> {
    pub fn play(&self, env: &mut Env) -> f32 {
        let mut total = 0.0;
        while !env.done() {
            total += self.layer.forward(env.obs()).into_scalar();
        }
        total
    }
}
"#;
        assert_eq!(count("autodiff_forward_without_backward", None, shadowed), 0);
        let named = shadowed.replace("    layer: Linear<B>,", "    layer: Linear<Autodiff<NdArray<f32>>>,");
        assert_eq!(count("autodiff_forward_without_backward", None, &named), 1);
    }

    /// A trainer holding a model type whose layers are declared on the autodiff alias: the
    /// trainer's field is an autodiff model too, and a caller's loop of inferences through the
    /// trainer's methods runs forwards that record graphs.
    #[test]
    fn a_field_of_a_type_holding_autodiff_layers_records_graphs() {
        let held = r#"
use burn::backend::{Autodiff, Wgpu};
use burn::tensor::Tensor;
type Train = Autodiff<Wgpu>;
pub struct PolicyNet {
    fc: Linear<Train>,
}
impl PolicyNet {
    pub fn forward(&self, x: Tensor<Train, 2>) -> Tensor<Train, 2> {
        self.fc.forward(x)
    }
}
pub struct Trainer {
    net: PolicyNet,
}
impl Trainer {
    pub fn infer_to_vec(&self, states: &[u32]) -> Vec<f32> {
        self.net.forward(encode(states)).into_data().value
    }
}
fn main() {
    let trainer = make();
    for step in 0..1000 {
        println!("{:?}", trainer.infer_to_vec(&[step]));
    }
}
"#;
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", held), vec![24]);
        let plain = held.replace("type Train = Autodiff<Wgpu>;", "type Train = Wgpu;");
        assert_eq!(count("autodiff_forward_without_backward", None, &plain), 0);
    }

    /// One function for training and validation epochs, with its backward behind a flag.
    const FLAGGED: &str = r#"
use burn::backend::{Autodiff, NdArray};
type B = Autodiff<NdArray>;
fn run_epoch(model: &mut Model<B>, items: &[Item], optim: &mut Optim, is_train: bool) -> f32 {
    let mut total = 0.0;
    for batch in items.chunks(32) {
        let loss = model.forward(input(batch)).loss(target(batch));
        total += loss.clone().into_scalar();
        if is_train {
            let grads = GradientsParams::from_grads(loss.backward(), model);
            *model = optim.step(1e-3, model.clone(), grads);
        }
    }
    total
}
fn train(model: &mut Model<B>, data: &Data, optim: &mut Optim) {
    for _epoch in 0..10 {
        run_epoch(model, &data.train, optim, true);
        run_epoch(model, &data.valid, optim, false);
    }
}
"#;

    #[test]
    fn a_caller_that_turns_the_backward_off_leaves_a_validation_loop() {
        let text = crate::rules::testing::messages("autodiff_forward_without_backward", FLAGGED);
        assert_eq!(text.len(), 1, "{text:?}");
        assert!(text[0].contains("turn its backward off"), "{text:?}");
        // Only training calls: every call runs the backward.
        let train_only = FLAGGED.replace("        run_epoch(model, &data.valid, optim, false);\n", "");
        assert_ne!(train_only, FLAGGED);
        assert_eq!(count("autodiff_forward_without_backward", None, &train_only), 0);
        // The flag is not a parameter (a field): nothing is known of its callers.
        let field = FLAGGED.replace("        if is_train {", "        if model.is_train {");
        assert_eq!(count("autodiff_forward_without_backward", None, &field), 0);
    }

    /// Self-play through two generic helpers and a selector whose method shares its name with
    /// the policy's (`self.policy.action(x)` inside `Selector::action`).
    const NESTED_ROLLOUT: &str = r#"
use burn::tensor::backend::{AutodiffBackend, Backend};
pub struct Policy<B: Backend> { input: Linear<B>, output: Linear<B> }
impl<B: Backend> Policy<B> {
    fn action(&self, state: Tensor<B, 1>) -> Tensor<B, 1> {
        self.output.forward(self.input.forward(state))
    }
}
pub struct Selector<B: Backend> { policy: Policy<B> }
impl<B: Backend> Selector<B> {
    pub fn action(&self, state: Tensor<B, 1>) -> Tensor<B, 1> {
        self.policy.action(state)
    }
    pub fn pick(&self, state: Tensor<B, 1>) -> usize {
        self.action(state).argmax(0).into_scalar() as usize
    }
}
fn play_game<B: Backend>(selector: &Selector<B>, env: &mut Env) -> f32 {
    let mut reward = 0.0;
    while !env.done() {
        let action = selector.pick(env.state());
        reward += env.step(action);
    }
    reward
}
fn play_games<B: Backend>(selector: &Selector<B>, env: &mut Env, n: usize) -> Vec<f32> {
    let mut rewards = Vec::new();
    for _ in 0..n {
        rewards.push(play_game(selector, env));
    }
    rewards
}
pub struct Trainer<B: AutodiffBackend> { selector: Selector<B> }
impl<B: AutodiffBackend> Trainer<B> {
    pub fn train(&mut self, env: &mut Env) {
        for _episode in 0..1_000 {
            let rewards = play_games(&self.selector, env, 40);
            let grads = self.loss(rewards).backward();
            self.update(grads);
        }
    }
}
"#;

    #[test]
    fn a_rollout_through_helpers_is_reported_once_where_it_loops() {
        let lines = crate::rules::testing::lines("autodiff_forward_without_backward", NESTED_ROLLOUT);
        // play_game's loop; not again at play_games' loop, which only calls it.
        assert_eq!(lines, vec![21], "{lines:?}");
        // The note shows where the forward pass itself runs (Policy::action's first layer).
        let notes = crate::rules::testing::elsewhere("autodiff_forward_without_backward", NESTED_ROLLOUT);
        assert!(notes.iter().any(|(line, text)| *line == 6 && text.contains("forward pass")), "{notes:?}");
    }

    /// An associated function called through a generic type alias (`MyAgent::<B>::react(..)`
    /// with `type MyAgent<B> = Ppo<B, Net<B>>;`) is the aliased type's; another type's function
    /// of the same name is not reached.
    const ALIAS_QUALIFIED: &str = r#"
use burn::tensor::backend::{AutodiffBackend, Backend};
pub struct Ppo<B: Backend, M> { model: Option<M>, b: PhantomData<B> }
impl<B: Backend, M: PpoModel<B>> Ppo<B, M> {
    pub fn react(state: &[f32], model: &M) -> usize {
        model.forward(to_tensor(state)).argmax(1).into_scalar() as usize
    }
}
pub struct Random<B: Backend> { b: PhantomData<B> }
impl<B: Backend> Random<B> {
    pub fn react(state: &[f32], _model: &Net<B>) -> usize {
        state.len() % 2
    }
}
type ALIAS<B> = TARGET<B, Net<B>>;
pub fn run<B: AutodiffBackend>(model: Net<B>, env: &mut Env) {
    let mut done = false;
    while !done {
        let action = ALIAS::<B>::react(&env.state(), &model);
        done = env.step(action);
    }
}
"#;

    #[test]
    fn a_call_through_a_type_alias_reaches_the_aliased_type() {
        let src = |alias: &str, target: &str| ALIAS_QUALIFIED.replace("ALIAS", alias).replace("TARGET", target);
        assert_eq!(count("autodiff_forward_without_backward", None, &src("MyAgent", "Ppo")), 1);
        // The alias names the type whose `react` runs no forward.
        assert_eq!(count("autodiff_forward_without_backward", None, &src("MyAgent", "Random")), 0);
    }

    /// A receiver typed by a type parameter (`agent: &mut A` with `A: Agent<B>`) may be any
    /// impl of its trait: the crate's impls of the called method are followed.
    const GENERIC_RECEIVER: &str = r#"
use burn::tensor::backend::{AutodiffBackend, Backend};
pub trait Agent<B: Backend> { fn act(&mut self, obs: &[f32]) -> usize; }
pub struct Dqn<B: AutodiffBackend> { q: Net<B> }
impl<B: AutodiffBackend> Agent<B> for Dqn<B> {
    fn act(&mut self, obs: &[f32]) -> usize {
        BODY
    }
}
pub fn evaluate<B: Backend, A: Agent<B>>(agent: &mut A, env: &mut Env) -> f32 {
    let mut total = 0.0;
    while !env.done() {
        let action = agent.act(&env.obs());
        total += env.step(action);
    }
    total
}
"#;

    #[test]
    fn a_receiver_of_a_type_parameter_reaches_the_trait_impls() {
        let forward = "self.q.forward(to_tensor(obs)).argmax(1).into_scalar() as usize";
        assert_eq!(count("autodiff_forward_without_backward", None, &GENERIC_RECEIVER.replace("BODY", forward)), 1);
        assert_eq!(
            count("autodiff_forward_without_backward", None, &GENERIC_RECEIVER.replace("BODY", "obs.len() % 4")),
            0
        );
    }

    /// A session generic over its agent (`struct Session<E, A> { agent: A }`) held in a field that
    /// names the agent (`session: Session<E, Greedy<B>>`): its calls through the type parameter
    /// reach that agent's impl, not the meet of every impl of the trait (a second agent here
    /// acts on the inner backend, so the meet runs no forward).
    const NAMED_TYPE_ARGUMENT: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub trait Agent {
    fn act(&mut self, obs: &[f32]) -> usize;
    fn observe(&mut self, obs: Vec<f32>, reward: f32);
}
pub struct Greedy<B: AutodiffBackend> { net: QNet<B>, memory: Vec<(Vec<f32>, f32)>, optim: Adam, warmup: usize }
pub struct Planner<B: AutodiffBackend> { net: QNet<B>, memory: Vec<(Vec<f32>, f32)>, optim: Adam, warmup: usize }
impl<B: AutodiffBackend> Agent for Greedy<B> {
    fn act(&mut self, obs: &[f32]) -> usize {
        self.net.forward(to_tensor(obs)).argmax(1).into_scalar() as usize
    }
    fn observe(&mut self, obs: Vec<f32>, reward: f32) {
        self.memory.push((obs, reward));
        if self.memory.len() >= self.warmup {
            let loss = self.net.forward(batch(&self.memory)).mean();
            let grads = GradientsParams::from_grads(loss.backward(), &self.net);
            self.net = self.optim.step(1e-3, self.net.clone(), grads);
        }
    }
}
impl<B: AutodiffBackend> Agent for Planner<B> {
    fn act(&mut self, obs: &[f32]) -> usize {
        self.net.valid().forward(to_tensor(obs).inner()).argmax(1).into_scalar() as usize
    }
    fn observe(&mut self, obs: Vec<f32>, reward: f32) {
        self.memory.push((obs, reward));
        if self.memory.len() >= self.warmup {
            let loss = self.net.forward(batch(&self.memory)).mean();
            let grads = GradientsParams::from_grads(loss.backward(), &self.net);
            self.net = self.optim.step(1e-3, self.net.clone(), grads);
        }
    }
}
pub struct Session<E, A> { agent: A, env: E, steps: usize }
impl<E: Env, A: Agent> Session<E, A> {
    pub fn act(&mut self, obs: &[f32]) -> usize {
        self.steps += 1;
        self.agent.act(obs)
    }
    pub fn observe(&mut self, obs: Vec<f32>, reward: f32) {
        self.agent.observe(obs, reward)
    }
}
pub struct Trainer<E, B: AutodiffBackend> { session: Session<E, AGENT<B>>, env: E }
impl<E: Env, B: AutodiffBackend> Trainer<E, B> {
    pub fn train(&mut self, steps: usize) {
        let mut obs = self.env.reset();
        for _ in 0..steps {
            let action = self.session.act(&obs);
            let (next, reward) = self.env.step(action);
            self.session.observe(obs, reward);
            obs = next;
        }
    }
}
"#;

    /// Constructors of the agents of [`NAMED_TYPE_ARGUMENT`].
    const AGENT_CONSTRUCTORS: &str = "
impl<B: AutodiffBackend> Greedy<B> { pub fn new(d: &B::Device) -> Self { todo!() } }
impl<B: AutodiffBackend> Planner<B> { pub fn new(d: &B::Device) -> Self { todo!() } }
";

    /// The same agents handed to a generic function (`fn run<A: Agent>(agent: &mut A, ..)`) as a
    /// value of a known type (`let mut agent = Greedy::new(..)`): the function's calls through
    /// `A` reach that type's impl, and its loop is reported for that call.
    const GENERIC_FN_AGENT: &str = r#"
pub fn run<A: Agent, E: Env>(agent: &mut A, env: &mut E, steps: usize) {
    let mut obs = env.reset();
    for _ in 0..steps {
        let action = agent.act(&obs);
        let (next, reward) = env.step(action);
        agent.observe(obs, reward);
        obs = next;
    }
}
pub fn main_loop<B: AutodiffBackend>(env: &mut Cart, device: &B::Device) {
    let mut agent = AGENT::<B>::new(device);
    run(&mut agent, env, 10_000);
}
"#;

    #[test]
    fn a_generic_function_handed_a_known_agent_reaches_that_agents_impl() {
        let agents = NAMED_TYPE_ARGUMENT.split("pub struct Session").next().unwrap_or_default().to_string();
        let src = |agent: &str| format!("{agents}{AGENT_CONSTRUCTORS}{}", GENERIC_FN_AGENT.replace("AGENT", agent));
        let found = crate::rules::testing::findings_at("autodiff_forward_without_backward", &src("Greedy"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].1.contains("warm-up"), "{found:?}");
        assert_eq!(count("autodiff_forward_without_backward", None, &src("Planner")), 0);
    }

    /// The session built in a local from a constructor handed an agent of a known type
    /// (`let mut session = Session::new(env, Greedy::new(..))`, or a struct literal).
    const LOCAL_SESSION: &str = r#"
impl<E: Env, A: Agent> Session<E, A> {
    pub fn new(env: E, agent: A) -> Self {
        Self { agent, env, steps: 0 }
    }
}
pub fn train_local<E: Env, B: AutodiffBackend>(env: E, device: &B::Device, steps: usize) {
    BUILD
    let mut obs = vec![0.0; 4];
    for _ in 0..steps {
        let action = session.act(&obs);
        session.observe(obs.clone(), action as f32);
    }
}
"#;

    #[test]
    fn a_local_built_around_a_known_agent_reaches_that_agents_impl() {
        let base = NAMED_TYPE_ARGUMENT.split("pub struct Trainer").next().unwrap_or_default().to_string();
        let src = |build: &str| format!("{base}{AGENT_CONSTRUCTORS}{}", LOCAL_SESSION.replace("BUILD", build));
        for build in [
            "let mut session = Session::new(env, Greedy::new(device));",
            "let agent = Greedy::new(device); let mut session = Session::new(env, agent);",
            "let mut session = Session { agent: Greedy::new(device), env, steps: 0 };",
        ] {
            let found = crate::rules::testing::findings_at("autodiff_forward_without_backward", &src(build));
            assert_eq!(found.len(), 1, "{build}: {found:?}");
            assert!(found[0].1.contains("warm-up"), "{build}: {found:?}");
        }
        let planner = src("let mut session = Session::new(env, Planner::new(device));");
        assert_eq!(count("autodiff_forward_without_backward", None, &planner), 0);
    }

    #[test]
    fn a_field_naming_its_generic_types_agent_reaches_that_agents_impl() {
        let src = |agent: &str| NAMED_TYPE_ARGUMENT.replace("AGENT", agent);
        let found = crate::rules::testing::findings_at("autodiff_forward_without_backward", &src("Greedy"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].1.contains("warm-up"), "{found:?}");
        // The agent acting on its inner backend runs no forward that waits in the store.
        assert_eq!(count("autodiff_forward_without_backward", None, &src("Planner")), 0);
    }

    /// A training loop split by a setting no iteration changes (`if !config.dry_run { backward }
    /// else { forward only }`): on dry runs the loop runs no backward at all. A setting whose
    /// both sides run backward, or a condition that varies per iteration, is not reported.
    const SETTING_SPLIT: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub fn train<B: AutodiffBackend>(mut model: Net<B>, config: &Config, batches: &mut Batches<B>, optim: &mut Adam) -> Net<B> {
    let mut step = 0;
    while let Some(batch) = batches.next() {
        if COND {
            let loss = model.forward(batch.x).loss(batch.y);
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optim.step(1e-3, model, grads);
        } else {
            let loss = model.forward(batch.x).loss(batch.y);
            println!("{}", loss.clone().into_scalar());
            ELSE_BACKWARD
        }
        step += 1;
    }
    model
}
"#;

    #[test]
    fn a_loop_split_by_a_setting_runs_no_backward_on_one_side() {
        let src = |cond: &str, else_backward: &str| {
            SETTING_SPLIT.replace("COND", cond).replace("ELSE_BACKWARD", else_backward)
        };
        let messages =
            crate::rules::testing::messages("autodiff_forward_without_backward", &src("!config.dry_run", ""));
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(messages[0].contains("setting turns its backward off"), "{messages:?}");
        assert_eq!(count("autodiff_forward_without_backward", None, &src("config.train.enabled", "")), 1);
        // Both sides train; a condition on the iteration (`step % 10 != 0`) is not a setting.
        let both = src(
            "!config.dry_run",
            "let _ = optim.step(1e-3, model.clone(), GradientsParams::from_grads(loss.backward(), &model));",
        );
        assert_eq!(count("autodiff_forward_without_backward", None, &both), 0);
        assert_eq!(count("autodiff_forward_without_backward", None, &src("step % 10 != 0", "")), 0);
    }

    /// A crate trait whose bounds name an autodiff backend (`trait TrainingBackend:
    /// SparseBackend + AutodiffBackend {}`) is an autodiff bound: a function generic over it
    /// instantiates the functions it calls with an autodiff backend.
    const TRAIT_BOUND: &str = r#"
use burn::tensor::backend::{AutodiffBackend, Backend};
pub trait SparseBackend: Backend {}
pub trait SparseTrainingBackend: SparseBackend + BOUND {}
pub trait Outer: SparseTrainingBackend {}
pub fn evaluate<B: SparseBackend>(model: &Net<B>, steps: usize) -> f32 {
    let mut total = 0.0;
    for _ in 0..steps {
        total += model.forward(input()).into_scalar();
    }
    total
}
pub fn train<B: Outer>(model: Net<B>) {
    let _ = evaluate(&model, 100);
}
"#;

    #[test]
    fn a_crate_trait_bounded_by_an_autodiff_backend_is_autodiff() {
        assert_eq!(
            count("autodiff_forward_without_backward", None, &TRAIT_BOUND.replace("BOUND", "AutodiffBackend")),
            1
        );
        assert_eq!(count("autodiff_forward_without_backward", None, &TRAIT_BOUND.replace("BOUND", "Clone")), 0);
    }

    /// A model method that loops over forward passes and returns its result (a denoising
    /// sampler) is judged at its callers: called on an autodiff model where no backward follows,
    /// its loop is the leak. Called in a training loop that runs backward, or on `valid()`, it is
    /// not; a loop over the model's own parts (`self.blocks[i]`) is a forward pass, not a sampler.
    const SAMPLER: &str = r#"
use burn::backend::{Autodiff, Wgpu};
use burn::tensor::backend::Backend;
type Back = Autodiff<Wgpu>;
pub struct Diffusion<B: Backend> { unet: Unet<B>, blocks: Vec<Block<B>>, steps: usize }
impl<B: Backend> Diffusion<B> {
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> { self.unet.forward(x) }
    fn noise_predict(&self, z: Tensor<B, 4>) -> Tensor<B, 4> { self.unet.forward(z) }
    pub fn sample(&self, n: usize, device: &B::Device) -> Tensor<B, 4> {
        let mut z = Tensor::random([n, 4, 8, 8], Distribution::Normal(0.0, 1.0), device);
        for LOOP {
            let eps = PREDICT;
            z = z - eps * 0.1;
        }
        z
    }
}
fn main() {
    let device = Default::default();
    let model = Diffusion::<Back>::new(&device);
    let images = MODEL.sample(1, &device);
    save(images);
}
"#;

    #[test]
    fn a_sampler_method_is_reported_where_it_is_called_without_backward() {
        let src = |lp: &str, predict: &str, model: &str| {
            SAMPLER.replace("LOOP", lp).replace("PREDICT", predict).replace("MODEL", model)
        };
        let sampler = src("_ in (0..self.steps).rev()", "self.noise_predict(z.clone())", "model");
        let lines = crate::rules::testing::lines("autodiff_forward_without_backward", &sampler);
        assert_eq!(lines, vec![21], "{sampler}");
        // The note points into the sampler's loop.
        let notes = crate::rules::testing::elsewhere("autodiff_forward_without_backward", &sampler);
        assert!(notes.iter().any(|(line, _)| *line == 12), "{notes:?}");
        // Sampling with the inner backend.
        let valid = src("_ in (0..self.steps).rev()", "self.noise_predict(z.clone())", "model.valid()");
        assert_eq!(count("autodiff_forward_without_backward", None, &valid), 0);
        // The model's own blocks in turn: a forward pass, not a sampler.
        let blocks = src("i in 0..self.blocks.len()", "self.blocks[i].forward(z.clone())", "model");
        assert_eq!(count("autodiff_forward_without_backward", None, &blocks), 0);
    }

    /// A backward that waits for a counter of the loop (`if step > learning_starts { learn }`,
    /// `if episode == 0 { continue }` before it) is a warm-up; a counter the loop resets
    /// (`accum_count = 0` after each accumulated step) is periodic and is not.
    const COUNTER_WARM_UP: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub fn run<B: AutodiffBackend>(agent: &mut Agent<B>, env: &mut Env, episodes: usize) {
    let mut step = 0;
    for episode in 0..episodes {
        let mut done = false;
        while !done {
            let q = agent.model.forward(env.state());
            done = env.step(q.argmax(1).into_scalar());
            step += 1;
            GATE
            let loss = agent.loss(env.batch());
            agent.learn(loss.backward());
            RESET
        }
    }
}
"#;

    #[test]
    fn a_backward_behind_a_loop_counter_is_a_warm_up() {
        let src = |gate: &str, reset: &str| COUNTER_WARM_UP.replace("GATE", gate).replace("RESET", reset);
        for gate in ["if step < 1_000 { continue; }", "if episode == 0 { continue; }"] {
            let messages = crate::rules::testing::messages("autodiff_forward_without_backward", &src(gate, ""));
            assert_eq!(messages.len(), 1, "{gate}: {messages:?}");
            assert!(messages[0].contains("warm-up"), "{messages:?}");
        }
        // Reset every time it trains: periodic, the backward sweeps each period.
        assert_eq!(
            count("autodiff_forward_without_backward", None, &src("if step < 32 { continue; }", "step = 0;")),
            0
        );
        // No gate: the loop trains every step.
        assert_eq!(count("autodiff_forward_without_backward", None, &src("", "")), 0);
    }

    /// A closure handed to a crate function that calls it in a loop without backward runs its
    /// forward in that loop, though the closure is written inside a training loop.
    const CLOSURE_ARG: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub fn evaluate_episode<P: FnMut(&[f32]) -> usize>(env: &mut Env, policy: &mut P) -> f32 {
    let mut total = 0.0;
    let mut done = false;
    while !done {
        let action = policy(&env.obs());
        let (reward, end) = env.step(action);
        total += reward;
        done = end;
    }
    total
}
pub fn train<B: AutodiffBackend>(mut model: Net<B>, env: &mut Env, optim: &mut Adam) {
    for step in 0..10_000 {
        let loss = model.forward(env.batch()).loss();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(1e-3, model, grads);
        if step % 500 == 0 {
            let reward = evaluate_episode(env, &mut |o| MODEL.forward(to_tensor(o)).argmax(1).into_scalar() as usize);
            println!("{reward}");
        }
    }
}
"#;

    #[test]
    fn a_closure_called_in_a_loop_by_a_crate_function_is_reported() {
        let messages = crate::rules::testing::messages(
            "autodiff_forward_without_backward",
            &CLOSURE_ARG.replace("MODEL", "model"),
        );
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(messages[0].contains("closure that `evaluate_episode` calls in a loop"), "{messages:?}");
        // Handed the inner backend.
        assert_eq!(count("autodiff_forward_without_backward", None, &CLOSURE_ARG.replace("MODEL", "model.valid()")), 0);
        // Called once, not in a loop.
        let once = CLOSURE_ARG.replace("MODEL", "model").replace("    while !done {\n", "    {\n");
        assert_ne!(once, CLOSURE_ARG.replace("MODEL", "model"));
        assert_eq!(count("autodiff_forward_without_backward", None, &once), 0);
    }

    /// The backward runs in what the caller hands in: a closure, or a closure bound to a local.
    /// The helper's loop is a training loop.
    const CALLBACK: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub fn run_epoch<B: AutodiffBackend, F>(mut model: Reg<B>, data: &[Batch<B>], mut apply: F) -> (Reg<B>, f32)
where
    F: FnMut(Reg<B>, Tensor<B, 1>) -> Reg<B>,
{
    let mut total = 0.0;
    for batch in data {
        let loss = model.forward(batch.x.clone()).sub(batch.y.clone()).powf_scalar(2.0).mean();
        total += loss.clone().into_scalar().elem::<f32>();
        model = apply(model, loss);
    }
    (model, total)
}
pub fn train<B: AutodiffBackend>(mut model: Reg<B>, data: Vec<Batch<B>>, optim: &mut Adam) {
    for epoch in 0..100 {
        HANDED
        model = m;
        println!("{epoch} {l}");
    }
}
"#;

    #[test]
    fn a_loop_whose_callback_runs_backward_is_a_training_loop() {
        let closure = "let (m, l) = run_epoch(model, &data, |m, loss| { let g = GradientsParams::from_grads(loss.backward(), &m); optim.step(1e-3, m, g) });";
        let bound = "let step = |m, loss: Tensor<B, 1>| { let g = GradientsParams::from_grads(loss.backward(), &m); optim.step(1e-3, m, g) };\n        let (m, l) = run_epoch(model, &data, step);";
        for handed in [closure, bound] {
            let src = CALLBACK.replace("HANDED", handed);
            assert_eq!(
                crate::rules::testing::messages("autodiff_forward_without_backward", &src),
                Vec::<String>::new(),
                "{handed}"
            );
            // The folded model is what training returned, not a graph.
            assert_eq!(count("accumulated_loss_tensor", None, &src), 0, "{handed}");
        }
        // A callback that only logs: the loop runs no backward.
        let logs = CALLBACK.replace(
            "HANDED",
            "let (m, l) = run_epoch(model, &data, |m, loss| { println!(\"{}\", loss.into_scalar()); m });",
        );
        assert_eq!(count("autodiff_forward_without_backward", None, &logs), 1);
    }

    /// A non-generic `main` that trains and then plays: the struct literal's path states the
    /// autodiff backend; the play session is built either from the trained net or from a
    /// `valid()` copy and a device; the base model frozen by the crate's mapper records nothing.
    const SESSION: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::module::{ModuleMapper, ParamId};
type Ad = Autodiff<NdArray>;
pub struct Freeze;
impl<B: Backend> ModuleMapper<B> for Freeze {
    fn map_float<const D: usize>(&mut self, _id: ParamId, t: Tensor<B, D>) -> Tensor<B, D> {
        t.set_require_grad(false)
    }
}
pub struct Session<'a, B: Backend> { net: &'a Net<B>, dev: B::Device, moves: Vec<usize> }
impl<'a, B: Backend> Session<'a, B> {
    pub fn new(net: &'a Net<B>, dev: &B::Device) -> Self {
        Self { net, dev: dev.clone(), moves: Vec::new() }
    }
    pub fn play_move(&mut self) {
        let q = self.net.forward(board(&self.moves, &self.dev));
        self.moves.push(q.argmax(1).into_scalar() as usize);
    }
}
fn main() {
    let dev = Default::default();
    let mut agent = Agent::<Ad> { net: Net::new(&dev) };
    let mut optim = SgdConfig::new().init();
    for epoch in 0..1000 {
        agent.train_on(&mut optim, &dev);
    }
    for game in 0..100_000 {
        let mut session = Session::new(NET, &dev);
        while session.moves.len() < 9 {
            session.play_move();
        }
    }
}
impl<B: AutodiffBackend> Agent<B> {
    fn train_on(&mut self, optim: &mut impl Optimizer<Net<B>, B>, dev: &B::Device) {
        let loss = self.net.forward(batch(dev)).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &self.net);
        self.net = optim.step(0.01, self.net.clone(), grads);
    }
}
"#;

    #[test]
    fn a_struct_literal_states_the_backend_and_a_frozen_net_with_a_device_builds_a_frozen_session() {
        let trained = SESSION.replace("NET", "&agent.net");
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &trained), vec![31]);
        // Without the turbofish nothing in `main` names a backend.
        assert_eq!(count("autodiff_forward_without_backward", None, &trained.replace("Agent::<Ad> {", "Agent {")), 0);
        // The session borrows an untracked copy; the device beside it holds no model.
        let frozen = SESSION.replace("NET", "&agent.net.valid()");
        assert_eq!(count("autodiff_forward_without_backward", None, &frozen), 0);
        // Frozen by the crate's own mapper.
        let mapped = SESSION.replace("NET", "&agent.net.clone().map(&mut Freeze)");
        assert_eq!(count("autodiff_forward_without_backward", None, &mapped), 0);
        // A mapper that does not freeze.
        let thawing = mapped.replace("set_require_grad(false)", "set_require_grad(true)");
        assert_eq!(count("autodiff_forward_without_backward", None, &thawing), 1);
    }

    const PREVIEW: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub fn train<B: AutodiffBackend>(mut generator: Generator<B>, loader: Loader<B>, optim: &mut Adam) {
    for epoch in 0..100 {
        if epoch % 10 == 0 {
            for i in SAMPLES {
                let image = generator.forward(noise::<B>(i));
                save_image(image.into_data(), epoch, i);
            }
        }
        for batch in loader.iter() {
            let loss = generator.forward(batch.noise).loss(batch.images);
            let grads = GradientsParams::from_grads(loss.backward(), &generator);
            generator = optim.step(1e-4, generator, grads);
        }
    }
}
"#;

    #[test]
    fn a_few_preview_forwards_in_a_training_iteration_are_swept_by_its_backward() {
        assert_eq!(count("autodiff_forward_without_backward", None, &PREVIEW.replace("SAMPLES", "0..3")), 0);
        // A loop over data (a validation set) holds graph state in proportion to its length.
        assert_eq!(count("autodiff_forward_without_backward", None, &PREVIEW.replace("SAMPLES", "0..n_samples")), 1);
        assert_eq!(count("autodiff_forward_without_backward", None, &PREVIEW.replace("SAMPLES", "0..64")), 1);
        // Before the first backward runs, nothing sweeps: a warm-up keeps every preview.
        let warm_up = PREVIEW.replace("SAMPLES", "0..3").replace(
            "            let grads = GradientsParams::from_grads(loss.backward(), &generator);\n            generator = optim.step(1e-4, generator, grads);\n",
            "            if buffer.len() > 1000 {\n                let grads = GradientsParams::from_grads(loss.backward(), &generator);\n                generator = optim.step(1e-4, generator, grads);\n            }\n",
        );
        assert!(warm_up.contains("buffer.len() > 1000"));
        // The preview, and the batch loop's own forward during the warm-up.
        assert_eq!(count("autodiff_forward_without_backward", None, &warm_up), 2);
    }

    const OPTION_TOTAL: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub fn update<B: AutodiffBackend>(mut model: Policy<B>, batch: &Batch<B>, optim: &mut Adam, epochs: usize) -> Policy<B> {
    for _ in 0..epochs {
        let mut total: Option<Tensor<B, 1>> = None;
        for step in &batch.steps {
            let step_loss = model.forward(step.obs.clone()).loss(&step.target);
            total = Some(match total.take() {
                None => step_loss,
                Some(acc) => acc + step_loss,
            });
        }
        if let Some(loss) = TOTAL {
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optim.step(3e-4, model, grads);
        }
    }
    model
}
"#;

    #[test]
    fn a_backward_of_the_losses_a_loop_folded_into_an_option_runs_through_it() {
        assert_eq!(count("autodiff_forward_without_backward", None, &OPTION_TOTAL.replace("TOTAL", "total")), 0);
        assert_eq!(count("autodiff_forward_without_backward", None, &OPTION_TOTAL.replace("TOTAL", "total.take()")), 0);
        // A backward on some other value's presence may not run: every forward waits.
        assert_eq!(count("autodiff_forward_without_backward", None, &OPTION_TOTAL.replace("TOTAL", "checkpoint")), 1);
    }

    const PAR_ROLLOUT: &str = r#"
use burn::tensor::backend::AutodiffBackend;
use rayon::prelude::*;
pub fn train<B: AutodiffBackend>(mut model: Policy<B>, envs: &[Env], optim: &mut Adam) -> Policy<B> {
    for _ in 0..1_000 {
        let actor = MODEL;
        let episodes: Vec<Episode> = (0..envs.len())
            .into_par_iter()
            .map_with(actor, |actor, i| {
                let mut env = envs[i].clone();
                let mut episode = Episode::default();
                while !env.done() {
                    let action = actor.forward(env.observe()).argmax(1).into_scalar();
                    episode.record(env.step(action));
                }
                episode
            })
            .collect();
        let loss = model.forward(batch_of(&episodes)).loss();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(3e-4, model, grads);
    }
    model
}
"#;

    #[test]
    fn a_closure_handed_an_untracked_model_by_map_with_runs_untracked() {
        assert_eq!(count("autodiff_forward_without_backward", None, &PAR_ROLLOUT.replace("MODEL", "model.valid()")), 0);
        assert_eq!(count("autodiff_forward_without_backward", None, &PAR_ROLLOUT.replace("MODEL", "model.clone()")), 1);
    }

    /// The call site picks the action at random until the same threshold that gates training.
    const CALL_SITE_WARM_UP: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub fn run<B: AutodiffBackend>(agent: &mut Agent<B>, env: &mut Env, steps: usize, warmup: usize) {
    for step in 0..steps {
        let action = if ACTS { env.random_action() } else { agent.model.forward(env.state()).argmax(1).into_scalar() };
        env.step(action);
        if step >= warmup {
            let loss = agent.loss(env.batch());
            agent.learn(loss.backward());
        }
    }
}
"#;

    #[test]
    fn a_forward_chosen_only_past_the_warm_up_runs_in_no_warm_up() {
        for random_first in ["step < warmup", "warmup > step"] {
            let src = CALL_SITE_WARM_UP.replace("ACTS", random_first);
            assert_eq!(count("autodiff_forward_without_backward", None, &src), 0, "{random_first}");
        }
        // The forward before the threshold, random actions after: every forward waits.
        for forward_first in ["step >= warmup", "warmup <= step"] {
            let src = CALL_SITE_WARM_UP.replace("ACTS", forward_first);
            assert_eq!(count("autodiff_forward_without_backward", None, &src), 1, "{forward_first}");
        }
    }

    /// The backward sits in a closure bound before the loop and called in it.
    const LOCAL_CLOSURE: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub fn train<B: AutodiffBackend>(mut actor: Actor<B>, env: &mut Env, optim: &mut Adam) {
    for _ in 0..1000 {
        let mut update = |actor: Actor<B>, batch: Batch<B>| {
            let loss = actor.forward(batch.obs).loss(batch.adv);
            optim.step(1e-3, actor, GradientsParams::from_grads(loss.backward(), &actor))
        };
        let mut done = false;
        while !done {
            let action = actor.forward(env.state()).argmax(1).into_scalar();
            done = env.step(action);
            CALL
        }
    }
}
"#;

    #[test]
    fn a_local_closure_that_runs_backward_runs_it_where_it_is_called() {
        let src = |call: &str| LOCAL_CLOSURE.replace("CALL", call);
        assert_eq!(count("autodiff_forward_without_backward", None, &src("actor = update(actor, env.batch());")), 0);
        // Called only after a warm-up: the forwards before it wait.
        let warm_up = src("if env.memory.len() > 1_000 { actor = update(actor, env.batch()); }");
        let messages = crate::rules::testing::messages("autodiff_forward_without_backward", &warm_up);
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(messages[0].contains("warm-up"), "{messages:?}");
        // Never called in the loop: it never runs backward.
        assert_eq!(count("autodiff_forward_without_backward", None, &src("")), 1);
    }

    /// A call through a type parameter (`M::forward_inner(net, x)`) whose only impl in the
    /// crate is a test's.
    const TEST_IMPL: &str = r#"
use burn::tensor::backend::AutodiffBackend;

pub trait Policy<B: AutodiffBackend> {
    type Inner;
    fn forward_inner(net: &Self::Inner, x: Tensor<B, 2>) -> Tensor<B, 2>;
}

pub fn rollout<B: AutodiffBackend, M: Policy<B>>(net: &M::Inner, env: &mut Env) -> f32 {
    let mut total = 0.0;
    while !env.done() {
        let action = M::forward_inner(net, env.state()).argmax(1).into_scalar();
        total += env.step(action);
    }
    total
}

CFG
mod tests {
    use super::*;
    impl<B: AutodiffBackend> Policy<B> for TestNet<B> {
        type Inner = TestNet<B>;
        fn forward_inner(net: &Self::Inner, x: Tensor<B, 2>) -> Tensor<B, 2> {
            net.linear.forward(x)
        }
    }
}
"#;

    /// An arena that plays a trait object (`mover: &mut dyn Agent`) hundreds of times: one
    /// impl holds the policy network, generic over the backend; the other is a baseline of host
    /// state only. `main` hands the policy built on the autodiff backend, and no backward runs.
    const DYN_ARENA: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::tensor::{backend::Backend, Tensor, TensorData};

type TrainB = Autodiff<NdArray>;

pub trait Agent {
    fn act(&mut self, board: &[f32]) -> usize;
}

pub struct PolicyAgent<B: Backend> {
    net: PolicyNet<B>,
    device: B::Device,
}

impl<B: Backend> Agent for PolicyAgent<B> {
    fn act(&mut self, board: &[f32]) -> usize {
        let x = Tensor::<B, 2>::from_data(TensorData::new(board.to_vec(), [1, 42]), &self.device);
        self.net.forward(x).argmax(1).into_scalar() as usize
    }
}

pub struct RandomAgent {
    state: u64,
}

impl Agent for RandomAgent {
    fn act(&mut self, _board: &[f32]) -> usize {
        self.state = self.state.wrapping_mul(6364136223846793005).wrapping_add(1);
        (self.state >> 33) as usize % 7
    }
}

pub fn play_roundSIG -> f32 {
    let mut board = vec![0.0f32; 42];
    for ply in 0..12 {
        MOVE
        board[col] = if ply % 2 == 0 { 1.0 } else { -1.0 };
    }
    board.iter().sum()
}

fn main() {
    let device = Default::default();
    let mut hero = PolicyAgent::<BACKEND> { net: PolicyNet::new(&device), device };
    let mut villain = RandomAgent { state: 7 };
    let mut wins = Vec::new();
    for _round in 0..300 {
        wins.push(play_round(&mut hero, &mut villain));
    }
}
"#;

    #[test]
    fn a_trait_object_handed_an_autodiff_policy_runs_its_forward() {
        let direct = "let col = if ply % 2 == 0 { a.act(&board) } else { b.act(&board) };";
        let chosen = "let (mover, _sign): (&mut dyn Agent, f32) = if ply % 2 == 0 { (&mut *a, 1.0) } else { (&mut *b, -1.0) };\n        let col = mover.act(&board);";
        for (sig, mv) in [
            ("(a: &mut dyn Agent, b: &mut dyn Agent)", direct),
            ("(a: &mut dyn Agent, b: &mut dyn Agent)", chosen),
            ("(a: &mut impl Agent, b: &mut impl Agent)", direct),
            ("<A: Agent, C: Agent>(a: &mut A, b: &mut C)", direct),
        ] {
            let src = DYN_ARENA.replace("SIG", sig).replace("MOVE", mv);
            let extra = mv.matches('\n').count();
            // The arena's loop, reached from `main` with the autodiff policy, and `main`'s loop
            // that plays it 300 times (as when the arena is typed `&mut PolicyAgent<B>`).
            assert_eq!(
                crate::rules::testing::lines("autodiff_forward_without_backward", &src.replace("BACKEND", "TrainB")),
                vec![37 + extra, 49 + extra],
                "{sig} {mv}"
            );
            // The same policy on the plain backend records no graph.
            assert_eq!(
                count("autodiff_forward_without_backward", None, &src.replace("BACKEND", "NdArray")),
                0,
                "{sig}"
            );
        }
    }

    #[test]
    fn an_impl_under_cfg_test_is_not_called_from_code_outside_tests() {
        assert_eq!(count("autodiff_forward_without_backward", None, &TEST_IMPL.replace("CFG", "#[cfg(test)]")), 0);
        assert_eq!(count("autodiff_forward_without_backward", None, &TEST_IMPL.replace("CFG", "")), 1);
    }

    /// A memory whose `sample` hands nothing until it holds a batch, and a loop that trains
    /// on what it hands.
    const SAMPLED_BATCH: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub struct Memory { items: Vec<Transition> }
impl Memory {
    pub fn sample(&self, n: usize) -> Option<Vec<Transition>> {
        GATE
        Some(self.items[..n].to_vec())
    }
}
impl<B: AutodiffBackend> Agent<B> {
    pub fn learn(&mut self, batch: Vec<Transition>) {
        let loss = self.model.forward(to_tensor(&batch)).loss();
        let grads = GradientsParams::from_grads(loss.backward(), &self.model);
        self.model = self.optim.step(1e-3, self.model.clone(), grads);
    }
}
pub fn run<B: AutodiffBackend>(agent: &mut Agent<B>, env: &mut Env, memory: &mut Memory) {
    for _ in 0..100_000 {
        let action = agent.model.forward(env.state()).argmax(1).into_scalar();
        memory.items.push(env.step(action));
        TRAIN
    }
}
"#;

    #[test]
    fn a_batch_handed_by_a_size_gate_through_if_let_or_match_is_a_warm_up() {
        let gate = "if self.items.len() < n {\n            return None;\n        }";
        for train in [
            "if let Some(batch) = memory.sample(32) { agent.learn(batch); }",
            "match memory.sample(32) { Some(batch) => agent.learn(batch), None => {} }",
            "let batch = match memory.sample(32) { Some(b) => b, None => continue };\n        agent.learn(batch);",
        ] {
            let src = SAMPLED_BATCH.replace("GATE", gate).replace("TRAIN", train);
            let messages = crate::rules::testing::messages("autodiff_forward_without_backward", &src);
            assert_eq!(messages.len(), 1, "{train}: {messages:?}");
            assert!(messages[0].contains("warm-up"), "{messages:?}");
            // A `sample` that hands something from the first step on gates nothing.
            let ungated = SAMPLED_BATCH.replace("GATE", "").replace("TRAIN", train);
            assert_eq!(count("autodiff_forward_without_backward", None, &ungated), 0, "{train}");
        }
    }

    /// The forward pass sits in a closure bound before the loop and called in it.
    const LOCAL_ACT: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub fn rollout<B: AutodiffBackend>(model: &Net<B>, env: &mut Env<B>) {
    let policy = MODEL;
    let act = |obs: Tensor<B, 2>| policy.forward(obs).argmax(1).into_scalar() as usize;
    while !env.done() {
        let a = act(env.obs());
        env.step(a);
    }
}
"#;

    #[test]
    fn a_local_closure_that_runs_a_forward_runs_it_where_it_is_called() {
        assert_eq!(
            crate::rules::testing::lines("autodiff_forward_without_backward", &LOCAL_ACT.replace("MODEL", "model")),
            vec![7]
        );
        assert_eq!(count("autodiff_forward_without_backward", None, &LOCAL_ACT.replace("MODEL", "model.valid()")), 0);
        // Bound inside the loop: its forward is already in it, reported once.
        let inside = LOCAL_ACT.replace("MODEL", "model").replace(
            "    let act = |obs: Tensor<B, 2>| policy.forward(obs).argmax(1).into_scalar() as usize;\n    while !env.done() {\n",
            "    while !env.done() {\n        let act = |obs: Tensor<B, 2>| policy.forward(obs).argmax(1).into_scalar() as usize;\n",
        );
        assert_ne!(inside, LOCAL_ACT.replace("MODEL", "model"));
        assert_eq!(count("autodiff_forward_without_backward", None, &inside), 1);
    }

    /// `Iterator::next` is one iteration of the loop that drives the iterator.
    const ITERATOR_NEXT: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub struct Runner<'a, B: AutodiffBackend> { agent: &'a mut Agent<B>, env: Env<B> }
impl<'a, B: AutodiffBackend> TRAIT for Runner<'a, B> {
    type Item = f32;
    fn next(&mut self) -> Option<f32> {
        let action = self.agent.model.forward(self.env.obs()).argmax(1).into_scalar();
        Some(self.env.step(action as usize))
    }
}
"#;

    #[test]
    fn an_iterators_next_is_a_loop_iteration() {
        assert_eq!(count("autodiff_forward_without_backward", None, &ITERATOR_NEXT.replace("TRAIT", "Iterator")), 1);
        // Another trait's `next` is called once for all the linter knows.
        assert_eq!(count("autodiff_forward_without_backward", None, &ITERATOR_NEXT.replace("TRAIT", "Stepper")), 0);
    }

    /// A function generic over a configuration that names both backends: its bounds speak of
    /// associated types, not of the values it is handed.
    const SPEC_GENERIC: &str = r#"
use burn::backend::{Autodiff, Wgpu};
use burn::module::AutodiffModule;
use burn::tensor::backend::Backend;
type MyBackend = Wgpu<f32, i32>;
type MyAutodiffBackend = Autodiff<MyBackend>;
pub fn evaluate<B: Backend, M: Scorer<B>>(model: &M, data: &[Tensor<B, 2>]) -> f32 {
    let mut sum = 0.0;
    for x in data {
        sum += model.forward(x.clone()).into_scalar();
    }
    sum
}
fn run_model<S>(args: &Args, data: &Data)
where
    S: ModelSpec<MyBackend, MyAutodiffBackend>,
    S::TrainModel: AutodiffModule<MyAutodiffBackend>,
{
    let model = S::init_infer(&args.config);
    println!("{}", evaluate(&model, &data.valid));
}
"#;

    #[test]
    fn a_configuration_type_naming_both_backends_makes_nothing_autodiff() {
        assert_eq!(count("autodiff_forward_without_backward", None, SPEC_GENERIC), 0);
        // A parameter of the bounded type is such a value.
        let handed = SPEC_GENERIC
            .replace(
                "fn run_model<S>(args: &Args, data: &Data)",
                "fn run_model<S>(args: &Args, data: &Data, trained: &S::TrainModel)",
            )
            .replace("evaluate(&model, &data.valid)", "evaluate(trained, &data.valid)");
        assert_ne!(handed, SPEC_GENERIC);
        assert_eq!(count("autodiff_forward_without_backward", None, &handed), 1);
    }

    /// A helper that sums a batch's forwards into the loss it returns, called by a training
    /// loop (which backpropagates it) and by VALIDATE.
    const LOSS_HELPER: &str = r#"
use burn::tensor::backend::{AutodiffBackend, Backend};
pub fn batch_loss<B: Backend>(model: &Net<B>, xs: &[Tensor<B, 2>]) -> Tensor<B, 1> {
    let mut total = Tensor::zeros([1], &xs[0].device());
    for x in xs {
        total = total + model.forward(x.clone()).mean();
    }
    total / xs.len() as f32
}
pub fn train<B: AutodiffBackend>(mut model: Net<B>, data: &[Vec<Tensor<B, 2>>], optim: &mut Adam) -> Net<B> {
    for xs in data {
        let loss = batch_loss(&model, xs);
        let grads = GradientsParams::from_grads(BACKWARD, &model);
        model = optim.step(1e-3, model, grads);
    }
    model
}
pub fn validate<B: AutodiffBackend>(model: &Net<B>, data: &[Vec<Tensor<B, 2>>]) -> f32 {
    let mut sum = 0.0;
    for xs in data {
        sum += batch_loss(VALIDATE, &inputs(xs)).into_scalar();
    }
    sum
}
"#;

    #[test]
    fn a_helper_summing_forwards_for_a_backpropagating_caller_is_judged_at_its_callers() {
        let src =
            |validate: &str, backward: &str| LOSS_HELPER.replace("VALIDATE", validate).replace("BACKWARD", backward);
        // Training, and validation on the inner backend: nothing grows.
        assert_eq!(count("autodiff_forward_without_backward", None, &src("&model.valid()", "loss.backward()")), 0);
        // Validation on the autodiff model: reported in the validation loop, not in the helper.
        let lines = crate::rules::testing::lines("autodiff_forward_without_backward", &src("model", "loss.backward()"));
        assert_eq!(lines, vec![21]);
        // No caller backpropagates the sum (the training loop recomputes its loss): the helper's
        // own loop is reported, as a rollout's would be.
        let lines = crate::rules::testing::lines(
            "autodiff_forward_without_backward",
            &src("&model.valid()", "model.forward(xs[0].clone()).mean().backward()"),
        );
        assert_eq!(lines, vec![6]);
        // The loss reaches the training loop through a second helper (`sequence_loss` returning
        // `batch_loss(..) * 0.5`): the same judgement, one call further.
        let chained = src("model", "loss.backward()")
            .replace("let loss = batch_loss(&model, xs);", "let loss = sequence_loss(&model, xs);")
            .replace("batch_loss(model,", "sequence_loss(model,")
            + "pub fn sequence_loss<B: Backend>(model: &Net<B>, xs: &[Tensor<B, 2>]) -> Tensor<B, 1> {\n    batch_loss(model, xs) * 0.5\n}\n";
        let lines = crate::rules::testing::lines("autodiff_forward_without_backward", &chained);
        assert_eq!(lines, vec![21]);
        let trained_only =
            chained.replace("sequence_loss(model, &inputs(xs))", "sequence_loss(&model.valid(), &inputs(xs))");
        assert_ne!(trained_only, chained);
        assert_eq!(count("autodiff_forward_without_backward", None, &trained_only), 0);
    }

    /// One step of the agent in a method of the trainer: act, then learn once the memory has
    /// filled. The loop calls that method.
    const STEP_METHOD: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub struct DqnAgent<B: AutodiffBackend> { net: Net<B>, buffer: Vec<f32> }
impl<B: AutodiffBackend> DqnAgent<B> {
    pub fn act(&mut self, obs: Tensor<B, 2>) -> usize {
        self.net.forward(obs).argmax(1).into_scalar() as usize
    }
    pub fn observe(&mut self, r: f32) {
        self.buffer.push(r);
        GATE {
            let loss = self.net.forward(batch(&self.buffer)).mean();
            let grads = loss.backward();
            self.net = step(self.net.clone(), grads);
        }
    }
}
pub struct Trainer<B: AutodiffBackend> { agent: DqnAgent<B>, env: Env<B> }
impl<B: AutodiffBackend> Trainer<B> {
    fn step_once(&mut self) -> f32 {
        let a = self.agent.act(self.env.obs());
        let r = self.env.step(a);
        self.agent.observe(r);
        r
    }
    pub fn run(&mut self, steps: usize) {
        for _ in 0..steps {
            self.step_once();
        }
    }
}
"#;

    #[test]
    fn a_step_method_whose_learning_waits_keeps_its_forwards_for_the_loop() {
        let messages = crate::rules::testing::messages(
            "autodiff_forward_without_backward",
            &STEP_METHOD.replace("GATE", "if self.buffer.len() >= 1000"),
        );
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(messages[0].contains("warm-up"), "{messages:?}");
        // Learning on every step sweeps the step's forward.
        assert_eq!(count("autodiff_forward_without_backward", None, &STEP_METHOD.replace("GATE", "")), 0);
    }

    /// Two types of the crate have an `act` method; the field's declared type says which one
    /// `self.policy.act(..)` calls.
    const FIELD_PICKS_METHOD: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub struct Random;
impl Random {
    pub fn act(&mut self, n: usize) -> usize { n / 2 }
}
pub struct Greedy<B: AutodiffBackend> { net: Net<B> }
impl<B: AutodiffBackend> Greedy<B> {
    pub fn act(&mut self, n: usize) -> usize { self.net.forward(obs(n)).argmax(1).into_scalar() as usize }
}
pub struct Trainer<B: AutodiffBackend> { policy: POLICY, net: Greedy<B>, env: Env }
impl<B: AutodiffBackend> Trainer<B> {
    pub fn run(&mut self, steps: usize) {
        for i in 0..steps {
            let a = self.policy.act(i);
            self.env.step(a);
        }
    }
}
"#;

    #[test]
    fn a_fields_declared_type_picks_the_method_a_call_on_it_reaches() {
        assert_eq!(
            count("autodiff_forward_without_backward", None, &FIELD_PICKS_METHOD.replace("POLICY", "Greedy<B>")),
            1
        );
        assert_eq!(
            count("autodiff_forward_without_backward", None, &FIELD_PICKS_METHOD.replace("POLICY", "Box<Greedy<B>>")),
            1
        );
        assert_eq!(
            count("autodiff_forward_without_backward", None, &FIELD_PICKS_METHOD.replace("POLICY", "Random")),
            0
        );
    }

    /// Methods called as paths (`Tensor::backward(&loss)`, `Net::forward(&model, x)`) are the
    /// same calls as `loss.backward()` and `model.forward(x)`.
    const PATH_CALLS: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub fn fit<B: AutodiffBackend>(mut model: Net<B>, optim: &mut O, batches: Vec<Tensor<B, 2>>) -> Net<B> {
    for x in batches {
        let loss = FORWARD.mean();
        let grads = BACKWARD;
        model = optim.step(1e-3, model, GradientsParams::from_grads(grads, &model));
    }
    model
}
"#;

    #[test]
    fn methods_called_by_path_are_the_same_calls() {
        let fit = |forward: &str, backward: &str| {
            let src = PATH_CALLS.replace("FORWARD", forward).replace("BACKWARD", backward);
            count("autodiff_forward_without_backward", None, &src)
        };
        assert_eq!(fit("model.forward(x)", "loss.backward()"), 0);
        assert_eq!(fit("model.forward(x)", "Tensor::backward(&loss)"), 0);
        assert_eq!(fit("Net::forward(&model, x)", "Tensor::backward(&loss)"), 0);
        // Without the backward, the path-called forward is reported as the method call is.
        assert_eq!(fit("model.forward(x)", "loss.into_scalar()"), 1);
        assert_eq!(fit("Net::forward(&model, x)", "loss.into_scalar()"), 1);
        assert_eq!(fit("<Net<B> as Module<B>>::forward(&model, x)", "loss.into_scalar()"), 1);
        // A loss module's `forward` called by path is a tensor operation.
        assert_eq!(fit("MseLoss::forward(&loss_fn, model.valid().forward(x.inner()))", "loss.into_scalar()"), 0);
    }

    /// A rollout that hands its outputs to the training loop, which backpropagates through
    /// them, or detaches them first with the crate's own in-place `detach(&mut self)`.
    const DETACHED_ROLLOUT: &str = r#"
use burn::tensor::backend::{AutodiffBackend, Backend};
pub struct Batch<B: Backend> { states: Vec<Tensor<B, 2>>, values: Vec<Tensor<B, 1>> }
impl<B: Backend> Batch<B> {
    pub fn detach(&mut self) {
        self.values = self.values.drain(..).map(|v| v.detach()).collect();
    }
}
fn rollout<B: Backend>(critic: &Critic<B>, env: &mut Env) -> Batch<B> {
    let mut batch = Batch { states: Vec::new(), values: Vec::new() };
    while !env.done() {
        let s = env.observe();
        let v = critic.forward(s.clone());
        env.step(v.clone().into_scalar());
        batch.values.push(v);
        batch.states.push(s);
    }
    batch
}
pub fn train<B: AutodiffBackend>(mut critic: Critic<B>, env: &mut Env, optim: &mut O) -> Critic<B> {
    for _ in 0..1000 {
        let mut batch = rollout(&critic, env);
        DETACH
        let loss = Tensor::cat(batch.values, 0).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &critic);
        critic = optim.step(1e-3, critic, grads);
    }
    critic
}
"#;

    #[test]
    fn an_in_place_detach_cuts_what_the_loss_is_computed_from() {
        let src = |detach: &str| DETACHED_ROLLOUT.replace("DETACH", detach);
        // The loss is computed from the rollout's outputs: an unrolled computation.
        assert_eq!(count("autodiff_forward_without_backward", None, &src("")), 0);
        // Detached in place first: no backward reaches the rollout's forwards.
        assert_eq!(
            crate::rules::testing::lines("autodiff_forward_without_backward", &src("batch.detach();")),
            vec![13]
        );
        // A `detach` the crate does not define returns a new value and changes nothing.
        let foreign = src("batch.detach();").replace("pub fn detach(&mut self)", "pub fn cut(&mut self)");
        assert_eq!(count("autodiff_forward_without_backward", None, &foreign), 0);
    }

    /// A learner's `fit` handed a validation batcher built on the inner backend returns the
    /// trained autodiff model, which then generates.
    #[test]
    fn a_batcher_on_the_inner_backend_does_not_make_the_trained_model_untracked() {
        let src = r#"
use burn::tensor::backend::{AutodiffBackend, Backend};
fn train<B: AutodiffBackend>(device: B::Device) -> Lm<B> {
    let batcher_valid = TextBatcher::<B::InnerBackend>::new(device.clone());
    let learner = LearnerBuilder::new("/tmp").build(LmConfig::new().init::<B>(&device), AdamConfig::new().init(), 1e-3);
    learner.fit(loader(TextBatcher::<B>::new(device.clone())), loader(batcher_valid))
}
pub fn generate_after<B: AutodiffBackend>(device: B::Device) -> Vec<usize> {
    let model = TRAINED;
    let mut toks = vec![0usize];
    for _ in 0..100 {
        let logits = model.forward(input(&toks));
        toks.push(argmax(logits));
    }
    toks
}
"#;
        assert_eq!(count("autodiff_forward_without_backward", None, &src.replace("TRAINED", "train::<B>(device)")), 1);
        assert_eq!(
            count("autodiff_forward_without_backward", None, &src.replace("TRAINED", "train::<B>(device).valid()")),
            0
        );
        // The same value made by a type that is not a data pipeline is taken for a model made
        // untracked, and what `fit` returns with it: nothing reported (the older reading).
        let other = src
            .replace("TRAINED", "train::<B>(device)")
            .replace("TextBatcher::<B::InnerBackend>", "TextSampler::<B::InnerBackend>");
        assert_eq!(count("autodiff_forward_without_backward", None, &other), 0);
    }

    /// A library's generic trainer: the agent is a type parameter bounded by the crate's trait,
    /// whose `update` the crate does not implement (its users do). Another type of the crate
    /// has an `act` that runs a forward pass.
    #[test]
    fn a_trait_method_only_users_implement_may_run_backward() {
        let src = r#"
use burn::tensor::backend::{AutodiffBackend, Backend};
pub trait Agent<B: AutodiffBackend> {
    fn act(&self, obs: &Obs) -> usize;
    fn update(&mut self, batch: Vec<Transition>);
}
pub struct Trainer<B: AutodiffBackend, A: Agent<B>> { agent: A, env: Env, memory: Memory }
impl<B: AutodiffBackend, A: Agent<B>> Trainer<B, A> {
    pub fn train(&mut self, steps: usize) {
        for _ in 0..steps {
            let a = self.agent.act(&self.env.obs());
            self.memory.push(self.env.step(a));
            UPDATE
        }
    }
}
pub struct Greedy<B: AutodiffBackend> { net: Net<B> }
impl<B: AutodiffBackend> Greedy<B> {
    pub fn act(&self, obs: &Obs) -> usize { self.net.forward(tensor(obs)).argmax(1).into_scalar() as usize }
}
"#;
        let with_update = src.replace("UPDATE", "self.agent.update(self.memory.sample(32));");
        assert_eq!(count("autodiff_forward_without_backward", None, &with_update), 0);
        // The trait's `act` is reached through the type parameter: `Greedy::act`, inherent, is
        // not a candidate, so nothing runs a forward pass either.
        let without = src.replace("UPDATE", "");
        assert_eq!(count("autodiff_forward_without_backward", None, &without), 0);
        // A local with the crate's own agent type: its `act` is the one called.
        let concrete = without.replace("agent: A,", "agent: Greedy<B>,");
        assert_eq!(count("autodiff_forward_without_backward", None, &concrete), 1);
    }

    /// `main` trains through a function that runs backward, then evaluates the model it returns:
    /// the body's only backward runs before the loop, so nothing sweeps the loop's forwards.
    const EVAL_AFTER_TRAINING: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
type Train = Autodiff<NdArray>;
fn train(data: &[(Tensor<Train, 2>, Tensor<Train, 2>)]) -> Net<Train> {
    let mut net = Net::new(&Default::default());
    let mut opt = AdamConfig::new().init();
    for (x, y) in data {
        let loss = (net.forward(x.clone()) - y.clone()).powf_scalar(2.0).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        net = opt.step(1e-3, net, grads);
    }
    net
}
fn main() {
    let (train_set, test_set) = load::<Train>();
    BEFORE
    let model = train(&train_set);
    let mut correct = 0;
    for (x, y) in test_set.iter() {
        let pred = model.forward(x.clone()).argmax(1);
        correct += pred.equal(y.clone().argmax(1)).int().sum().into_scalar();
    }
    println!("{correct}");
}
"#;

    #[test]
    fn reports_evaluation_after_every_backward_of_the_body() {
        let src = EVAL_AFTER_TRAINING.replace("BEFORE", "");
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &src), vec![21]);
        // The evaluation on the inner backend.
        let valid =
            src.replace("let pred = model.forward(x.clone())", "let pred = model.valid().forward(x.clone().inner())");
        assert_ne!(valid, src);
        assert_eq!(count("autodiff_forward_without_backward", None, &valid), 0);
        // A loop before the training call: its forwards are swept by the training's backward.
        let before = EVAL_AFTER_TRAINING
            .replace("BEFORE", "for (x, _) in test_set.iter() { println!(\"{}\", model0.forward(x.clone()).mean().into_scalar()); }")
            .replace("    let mut correct = 0;\n    for (x, y) in test_set.iter() {\n        let pred = model.forward(x.clone()).argmax(1);\n        correct += pred.equal(y.clone().argmax(1)).int().sum().into_scalar();\n    }\n", "");
        assert_eq!(count("autodiff_forward_without_backward", None, &before), 0);
        // A function called once per training step: the next call's backward sweeps the loop.
        let per_step = src.replace("fn main() {", "fn round() {")
            + "fn main() {\n    for _ in 0..100 {\n        round();\n    }\n}\n";
        assert_eq!(count("autodiff_forward_without_backward", None, &per_step), 0);
    }

    /// REINFORCE: `act` pushes each step's log-probability into the agent's buffer, and the
    /// end-of-episode update concatenates it into the loss it backpropagates.
    const ON_POLICY_BUFFER: &str = r#"
use burn::tensor::backend::AutodiffBackend;
use burn::optim::{GradientsParams, Optimizer};
pub struct Reinforce<B: AutodiffBackend, O> { net: PolicyNet<B>, opt: O, saved: Vec<Tensor<B, 1>>, rewards: Vec<f32> }
impl<B: AutodiffBackend, O: Optimizer<PolicyNet<B>, B>> Reinforce<B, O> {
    fn act(&mut self, s: Tensor<B, 2>) -> usize {
        let logp = self.net.forward(s);
        let a = sample(logp.clone().exp());
        KEEP
        a
    }
    fn finish_episode(&mut self) {
        let ret = Tensor::<B, 1>::from_floats(returns(&self.rewards).as_slice(), &self.net.devices()[0]);
        let logp = Tensor::cat(std::mem::take(&mut self.saved), 0);
        let loss = -(logp * ret).sum();
        let grads = GradientsParams::from_grads(loss.backward(), &self.net);
        self.net = self.opt.step(1e-2, self.net.clone(), grads);
        self.rewards.clear();
    }
}
pub fn train<B: AutodiffBackend, O: Optimizer<PolicyNet<B>, B>>(agent: &mut Reinforce<B, O>, env: &mut Env<B>) {
    for _ in 0..1000 {
        let mut s = env.reset();
        loop {
            let a = agent.act(s);
            let (next, r, done) = env.step(a);
            agent.rewards.push(r);
            if done { break; }
            s = next;
        }
        agent.finish_episode();
    }
}
"#;

    #[test]
    fn accepts_outputs_kept_in_the_agents_buffer_for_the_update() {
        let kept = ON_POLICY_BUFFER.replace("KEEP", "self.saved.push(logp.slice([0..1, a..a + 1]).reshape([1]));");
        assert_eq!(count("autodiff_forward_without_backward", None, &kept), 0);
        // Only the action leaves `act`: a rollout whose outputs no backward reaches.
        let dropped = ON_POLICY_BUFFER.replace("KEEP", "");
        assert_eq!(count("autodiff_forward_without_backward", None, &dropped), 1);
    }

    /// The same REINFORCE with the episode's buffer a struct of its own, lent to `act` and to
    /// the end-of-episode update (`agent.act(s, &mut episode)` pushing into `buf.log_probs`).
    const LENT_BUFFER: &str = r#"
use burn::tensor::backend::AutodiffBackend;
use burn::optim::{GradientsParams, Optimizer};
pub struct Episode<B: AutodiffBackend> { log_probs: Vec<Tensor<B, 1>>, rewards: Vec<f32> }
pub struct Reinforce<B: AutodiffBackend, O> { net: PolicyNet<B>, opt: O }
impl<B: AutodiffBackend, O: Optimizer<PolicyNet<B>, B>> Reinforce<B, O> {
    fn act(&self, s: Tensor<B, 2>, buf: &mut Episode<B>) -> usize {
        let logp = self.net.forward(s);
        let a = sample(logp.clone().exp());
        KEEP
        a
    }
    fn finish_episode(&mut self, buf: &mut Episode<B>) {
        let ret = Tensor::<B, 1>::from_floats(returns(&buf.rewards).as_slice(), &self.net.devices()[0]);
        let logp = Tensor::cat(buf.log_probs.drain(..).collect(), 0);
        let loss = -(logp * ret).sum();
        let grads = GradientsParams::from_grads(loss.backward(), &self.net);
        self.net = self.opt.step(1e-2, self.net.clone(), grads);
        buf.rewards.clear();
    }
}
pub fn train<B: AutodiffBackend, O: Optimizer<PolicyNet<B>, B>>(agent: &mut Reinforce<B, O>, env: &mut Env<B>) {
    let mut episode = Episode { log_probs: Vec::new(), rewards: Vec::new() };
    for _ in 0..1000 {
        let mut s = env.reset();
        loop {
            let a = agent.act(s, &mut episode);
            let (next, r, done) = env.step(a);
            episode.rewards.push(r);
            if done { break; }
            s = next;
        }
        agent.finish_episode(&mut episode);
    }
}
"#;

    #[test]
    fn accepts_outputs_kept_in_a_buffer_lent_for_the_update() {
        let kept = LENT_BUFFER.replace("KEEP", "buf.log_probs.push(logp.slice([0..1, a..a + 1]).reshape([1]));");
        assert_eq!(count("autodiff_forward_without_backward", None, &kept), 0);
        // Only the action leaves `act`: a rollout whose outputs no backward reaches.
        let dropped = LENT_BUFFER.replace("KEEP", "");
        assert_eq!(count("autodiff_forward_without_backward", None, &dropped), 1);
    }

    /// burn 0.22: the backend is a value (`device.autodiff()`), so a helper that is not generic
    /// runs its forwards on whatever model its caller hands it.
    const DEVICE_HELPER: &str = r#"
use burn::prelude::*;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
fn embed_bank(encoder: &Encoder, bank: &[Tensor<2>]) -> Vec<Vec<f32>> {
    let mut out = Vec::new();
    for x in bank {
        out.push(encoder.forward(x.clone()).into_data().to_vec().unwrap());
    }
    out
}
fn main() {
    let device = DEVICE;
    let mut encoder = Encoder::new(&device);
    let mut opt = AdamConfig::new().init();
    let (train, bank) = load(&device);
    for epoch in 0..100 {
        for x in train.iter() {
            let loss = encoder.forward(x.clone()).powf_scalar(2.0).mean();
            let grads = GradientsParams::from_grads(loss.backward(), &encoder);
            encoder = opt.step(1e-3, encoder, grads);
        }
        if epoch % 5 == 0 {
            println!("{}", embed_bank(&encoder, &bank).len());
        }
    }
}
"#;

    #[test]
    fn reports_a_helper_handed_a_model_on_an_autodiff_device() {
        let src = DEVICE_HELPER.replace("DEVICE", "Default::default().autodiff()");
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &src), vec![7]);
        // A crate whose manifest requires burn 0.21 or older: its devices have no `autodiff()`,
        // so a method of that name is the crate's own.
        assert_eq!(
            crate::rules::testing::count_in_era("autodiff_forward_without_backward", &src, crate::BurnEra::Components),
            1
        );
        assert_eq!(
            crate::rules::testing::count_in_era(
                "autodiff_forward_without_backward",
                &src,
                crate::BurnEra::TypedBackends
            ),
            0
        );
        // The helper handed the model without autodiff.
        let valid = src.replace("embed_bank(&encoder, &bank)", "embed_bank(&encoder.valid(), &bank)");
        assert_ne!(valid, src);
        assert_eq!(count("autodiff_forward_without_backward", None, &valid), 0);
    }

    /// A model with no `forward`: its methods compute from the parameters' tensors they read
    /// (`layer.weight.val()`), as a hand-written masked layer does.
    const PARAM_READS: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::module::Module;
use burn::nn::Linear;
use burn::tensor::backend::{AutodiffBackend, Backend};
#[derive(Module, Debug)]
pub struct Made<B: Backend> { inp: Linear<B>, out: Linear<B> }
impl<B: Backend> Made<B> {
    fn masked(&self, layer: &Linear<B>, x: Tensor<B, 2>, mask: Tensor<B, 2>) -> Tensor<B, 2> {
        x.matmul(layer.weight.val() * mask)
    }
    pub fn logits(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let h = self.masked(&self.inp, x.clone(), mask(&x.device()));
        self.masked(&self.out, h, mask(&x.device()))
    }
}
fn train<AB: AutodiffBackend>(device: &AB::Device) -> Made<AB> {
    let mut model = Made::new(device);
    let mut optim = AdamConfig::new().init();
    for _ in 0..1000 {
        let loss = model.logits(batch(device)).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(1e-3, model, grads);
    }
    model
}
fn sample<B: Backend>(model: &Made<B>, device: &B::Device, n: usize) -> Vec<f32> {
    let mut canvas = Tensor::<B, 2>::zeros([1, 64], device);
    for _ in 0..n {
        canvas = canvas + model.logits(canvas.clone());
    }
    canvas.into_data().to_vec().unwrap()
}
fn main() {
    let device = Default::default();
    let model = train::<Autodiff<NdArray>>(&device);
    println!("{:?}", sample(HANDED, &device, 10_000));
}
"#;

    #[test]
    fn a_model_method_that_computes_from_parameter_reads_is_a_forward_pass() {
        let src = PARAM_READS.replace("HANDED", "&model");
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &src), vec![30]);
        let valid = PARAM_READS.replace("HANDED", "&model.valid()");
        assert_eq!(count("autodiff_forward_without_backward", None, &valid), 0);
    }

    /// An agent acting each step; it learns only once its replay memory holds `START`
    /// transitions, or in micro-batches that it empties at each update.
    const ACCUMULATING_AGENT: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::AutodiffBackend;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
pub struct Agent<B: AutodiffBackend, O> { q: QNet<B>, optim: O, device: B::Device, pending: Vec<Tensor<B, 1>>, k: usize }
impl<B: AutodiffBackend, O: Optimizer<QNet<B>, B>> Agent<B, O> {
    pub fn act(&mut self, obs: &[f32]) -> usize {
        let x = Tensor::<B, 2>::from_floats(obs, &self.device);
        self.q.forward(x).argmax(1).into_scalar().elem::<i64>() as usize
    }
    pub fn push(&mut self, obs: &[f32], target: f32) -> Option<f32> {
        let x = Tensor::<B, 2>::from_floats(obs, &self.device);
        let loss = (self.q.forward(x).max_dim(1).sum() - target).powf_scalar(2.0);
        self.pending.push(loss);
        if self.pending.len() < self.k {
            return None;
        }
        let total = std::mem::take(&mut self.pending).into_iter().reduce(|a, b| a + b)?;
        let grads = GradientsParams::from_grads(total.backward(), &self.q);
        self.q = self.optim.step(1e-3, self.q.clone(), grads);
        Some(total.into_scalar().elem::<f32>())
    }
}
const START: usize = 50_000;
fn main() {
    let device = Default::default();
    let mut agent: Agent<Autodiff<NdArray>, _> = Agent { q: QNet::new(&device), optim: AdamConfig::new().init(), device, pending: Vec::new(), k: 4 };
    let mut memory: Vec<(Vec<f32>, f32)> = Vec::new();
    for step in 0..10_000 {
        let obs = observe(step);
        BODY
    }
}
"#;

    #[test]
    fn micro_batches_emptied_at_each_update_are_no_warm_up() {
        let warm_up = ACCUMULATING_AGENT.replace(
            "BODY",
            "let a = agent.act(&obs);\n        memory.push((obs, a as f32));\n        if memory.len() >= START { let (o, t) = memory[step % memory.len()].clone(); agent.push(&o, t); }",
        );
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &warm_up), vec![31]);
        // Micro-batches emptied at each update: every k-th call's backward sweeps the others.
        let accumulate = ACCUMULATING_AGENT.replace("BODY", "agent.push(&obs, 1.0);");
        assert_eq!(count("autodiff_forward_without_backward", None, &accumulate), 0);
        // Never emptied: the wait is a warm-up once, and the store is swept only after it.
        let kept = accumulate.replace("std::mem::take(&mut self.pending)", "self.pending.clone()");
        assert_ne!(kept, accumulate);
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &kept), vec![31]);
    }

    /// A training-step helper returns a loss its caller backpropagates; the model's encoder runs
    /// its own loop over the source sequence.
    const ENCODER_STEP: &str = r#"
use burn::tensor::backend::AutodiffBackend;
#[derive(Module, Debug)]
pub struct Seq2Seq<B: Backend> { cell: GruCell<B>, head: Linear<B> }
impl<B: Backend> Seq2Seq<B> {
    fn encode(&self, src: Tensor<B, 3>) -> Tensor<B, 2> {
        let [batch, len, _] = src.dims();
        let mut h = Tensor::zeros([batch, 64], &src.device());
        for t in 0..len {
            h = self.cell.forward(src.clone().slice([0..batch, t..t + 1]).squeeze(1), h);
        }
        h
    }
}
fn train_step<B: AutodiffBackend>(model: &Seq2Seq<B>, src: Tensor<B, 3>, tgt: Tensor<B, 2>) -> Tensor<B, 1> {
    let h = model.encode(src);
    (model.head.forward(h) - tgt).powf_scalar(2.0).mean()
}
fn main() {
    let mut model = Seq2Seq::<Autodiff<NdArray>>::new(&Default::default());
    for it in 0..20_000 {
        let (src, tgt) = batch(it);
        let loss = STEP;
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = OPTIM.step(1e-3, model, grads);
    }
}
"#;

    #[test]
    fn a_sampler_in_a_step_helper_whose_loss_is_backpropagated_is_swept() {
        let src = ENCODER_STEP.replace("STEP", "train_step(&model, src, tgt)");
        assert_eq!(count("autodiff_forward_without_backward", None, &src), 0);
        // The helper's result is only logged: nothing sweeps the encoder's forwards.
        let logged = src
            .replace("let loss = train_step(&model, src, tgt);", "println!(\"{}\", train_step(&model, src.clone(), tgt.clone()).into_scalar());\n        let loss = model.head.forward(model.cell.forward(src.mean_dim(1).squeeze(1), Tensor::zeros([32, 64], &Default::default()))).mean();");
        assert_ne!(logged, src);
        assert_eq!(count("autodiff_forward_without_backward", None, &logged), 1);
    }

    /// burn 0.22: a launcher that makes both devices, trains on the autodiff one and hands the
    /// plain one to an inference function that loads its own model; or trains and untracks the
    /// trained model on the spot.
    const LAUNCH: &str = r#"
use burn::prelude::*;
use burn::module::AutodiffModule;
pub fn infer(device: Device, artifact: &str) {
    let model = Mlp::new(&device).load_file(artifact, &CompactRecorder::new(), &device).unwrap();
    for _ in 0..100_000 {
        let x = Tensor::<2>::random([64, 16], Distribution::Default, &device);
        println!("{}", model.forward(x).mean().into_scalar::<f32>());
    }
}
pub fn generate(model: &Mlp, n: usize, device: &Device) -> Vec<f32> {
    let mut out = Vec::new();
    for i in 0..n {
        out.push(model.forward(Tensor::<2>::ones([1, 16], device) * i as f32).mean().into_scalar::<f32>());
    }
    out
}
pub fn launch() {
    let device = Device::default();
    let autodiff_device = device.clone().autodiff();
    CALLS
}
"#;

    #[test]
    fn a_launcher_that_hands_the_plain_device_or_an_untracked_model_makes_nothing_autodiff() {
        let plain =
            LAUNCH.replace("CALLS", "train(20_000, autodiff_device, \"/tmp/m\");\n    infer(device, \"/tmp/m\");");
        assert_eq!(count("autodiff_forward_without_backward", None, &plain), 0);
        let tracked = LAUNCH.replace("CALLS", "infer(autodiff_device.clone(), \"/tmp/m\");");
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &tracked), vec![8]);
        let valid = LAUNCH.replace(
            "CALLS",
            "let model = train(20_000, &autodiff_device).valid();\n    generate(&model, 1000, &device);",
        );
        assert_eq!(count("autodiff_forward_without_backward", None, &valid), 0);
        let kept = LAUNCH
            .replace("CALLS", "let model = train(20_000, &autodiff_device);\n    generate(&model, 1000, &device);");
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &kept), vec![14]);
    }

    /// Iterator methods call their closure once per element: the closure's body is a loop body.
    const ITERATOR_EVAL: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub fn score<B: AutodiffBackend>(model: &Net<B>, batches: &[Tensor<B, 2>]) -> Vec<f32> {
    batches.iter().map(|b| MODEL.forward(b.clone()).mean().into_scalar()).collect()
}
pub fn train<B: AutodiffBackend>(mut model: Net<B>, data: &[Vec<Tensor<B, 2>>], optim: &mut Adam) -> Net<B> {
    for xs in data {
        let outs: Vec<Tensor<B, 2>> = xs.iter().map(|x| model.forward(x.clone())).collect();
        let loss = Tensor::cat(outs, 0).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(1e-3, model, grads);
    }
    model
}
pub fn first<B: AutodiffBackend>(model: &Net<B>, batch: Option<Tensor<B, 2>>) -> Option<f32> {
    batch.map(|b| model.forward(b).mean().into_scalar())
}
"#;

    #[test]
    fn an_iterator_methods_closure_is_a_loop_body() {
        let src = ITERATOR_EVAL.replace("MODEL", "model");
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &src), vec![4]);
        // For each element of an untracked model, nothing; the training loop's own
        // forwards feed its loss; `Option::map` runs once.
        assert_eq!(
            count("autodiff_forward_without_backward", None, &ITERATOR_EVAL.replace("MODEL", "model.valid()")),
            0
        );
    }

    /// An evaluator whose model field names the inner backend, a preview bounded by the crate's
    /// constants, and a shape check that breaks after its first batch.
    const BOUNDED: &str = r#"
use burn::tensor::backend::AutodiffBackend;
const PROMPTS: [&str; 3] = ["a", "b", "c"];
const PREVIEW_LEN: usize = 8;
pub struct Evaluator<B: AutodiffBackend> {
    model: Net<B::InnerBackend>,
    data: Vec<Tensor<B::InnerBackend, 2>>,
}
impl<B: AutodiffBackend> Evaluator<B> {
    pub fn score(&self) -> f32 {
        let mut total = 0.0;
        for x in &self.data {
            total += self.model.forward(x.clone()).mean().into_scalar();
        }
        total
    }
}
pub fn train<B: AutodiffBackend>(mut model: Net<B>, data: &[Tensor<B, 2>], optim: &mut Adam) -> Net<B> {
    for x in data.iter() {
        let out = model.forward(x.clone());
        assert_eq!(out.dims()[1], 4);
        break;
    }
    for epoch in 0..100 {
        for prompt in PROMPTS.iter() {
            for _ in 0..PREVIEW_LEN {
                show(prompt, model.forward(encode(prompt)).argmax(1).into_scalar());
            }
        }
        for x in data {
            let loss = model.forward(x.clone()).mean();
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optim.step(1e-3, model, grads);
        }
    }
    model
}
"#;

    #[test]
    fn inner_backend_fields_constant_bounds_and_loops_that_run_once_are_left_alone() {
        assert_eq!(count("autodiff_forward_without_backward", None, BOUNDED), 0);
        // Past the bound the preview is a rollout; a field of the autodiff backend is tracked;
        // a check that keeps looping is a loop.
        let long = BOUNDED.replace("const PREVIEW_LEN: usize = 8;", "const PREVIEW_LEN: usize = 200;");
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &long), vec![27]);
        let tracked = BOUNDED.replace("    model: Net<B::InnerBackend>,", "    model: Net<B>,");
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &tracked), vec![13]);
        let looping = BOUNDED.replace("        break;\n", "");
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &looping), vec![20]);
        let returning = BOUNDED.replace("        break;\n", "        return model;\n");
        assert_eq!(count("autodiff_forward_without_backward", None, &returning), 0);
    }

    /// A backbone frozen when the struct is built, and per-head metrics in a training step.
    const FROZEN_FIELD: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub struct Probe<B: AutodiffBackend> {
    backbone: Backbone<B>,
    heads: Vec<Linear<B>>,
    features: Vec<Tensor<B, 2>>,
}
impl<B: AutodiffBackend> Probe<B> {
    pub fn new(path: &str, device: &B::Device) -> Self {
        let backbone = load_backbone::<B>(path, device).FREEZE;
        Self { backbone, heads: vec![], features: Vec::new() }
    }
    pub fn cache(&mut self, data: Vec<Tensor<B, 2>>) {
        for x in data {
            let f = self.backbone.forward(x);
            self.features.push(f);
        }
    }
    pub fn fit(&mut self, optim: &mut Adam, epochs: usize) {
        let mut accs = vec![0.0; self.heads.len()];
        for _ in 0..epochs {
            for f in &self.features {
                for (k, head) in self.heads.iter().enumerate() {
                    accs[k] = head.forward(f.clone()).argmax(1).float().mean().into_scalar();
                }
                let loss = self.heads[0].forward(f.clone()).mean();
                let grads = GradientsParams::from_grads(loss.backward(), &self.heads[0]);
                self.heads[0] = optim.step(1e-3, self.heads[0].clone(), grads);
            }
        }
    }
}
"#;

    #[test]
    fn a_field_built_untracked_and_a_loop_over_a_models_parts_are_left_alone() {
        assert_eq!(count("autodiff_forward_without_backward", None, &FROZEN_FIELD.replace("FREEZE", "no_grad()")), 0);
        // Built tracked, the backbone's forwards pile up in the store.
        let tracked = FROZEN_FIELD.replace(".FREEZE", "");
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &tracked), vec![15]);
        // One head run again and again is a rollout of its own.
        let same_head = FROZEN_FIELD
            .replace("FREEZE", "no_grad()")
            .replace("accs[k] = head.forward(", "accs[k] = self.heads[0].forward(");
        assert_ne!(same_head, FROZEN_FIELD.replace("FREEZE", "no_grad()"));
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &same_head), vec![24]);
    }

    /// A model of plain tensors (constants, no `Param`) generating on an autodiff backend.
    const PLAIN_TENSORS: &str = r#"
use burn::prelude::*;
type Backend = burn::backend::Autodiff<burn::backend::Wgpu>;
#[derive(Module, Debug)]
pub struct Layer<B: Backend> {
    pub weights: WEIGHTS,
    pub bias: Tensor<B, 1>,
    pub act: Gelu,
}
#[derive(Module, Debug)]
pub struct Gpt<B: Backend> {
    pub blocks: Vec<Layer<B>>,
}
impl<B: Backend> Gpt<B> {
    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.blocks.iter().fold(x, |x, l| l.act.forward(x.matmul(l.weights.clone())))
    }
    pub fn generate(&self, mut x: Tensor<B, 2>, n: usize) -> Vec<i32> {
        let mut out = Vec::new();
        for _ in 0..n {
            x = self.forward(x);
            out.push(x.clone().argmax(1).into_scalar().elem::<i32>());
        }
        out
    }
}
fn main() {
    let model: Gpt<Backend> = load_exploded(&Default::default());
    println!("{:?}", model.generate(prompt(), 8));
}
"#;

    #[test]
    fn a_model_of_plain_tensors_records_no_graph() {
        assert_eq!(
            count("autodiff_forward_without_backward", None, &PLAIN_TENSORS.replace("WEIGHTS", "Tensor<B, 2>")),
            0
        );
        let param = PLAIN_TENSORS.replace("WEIGHTS", "Param<Tensor<B, 2>>");
        assert_eq!(count("autodiff_forward_without_backward", None, &param), 1);
        // A crate that asks a tensor to require gradients may train plain fields.
        let tracked = PLAIN_TENSORS
            .replace("WEIGHTS", "Tensor<B, 2>")
            .replace("fn main() {", "fn main() {\n    let w = w().require_grad();");
        assert_eq!(count("autodiff_forward_without_backward", None, &tracked), 1);
        // Built by a loader whose `Result` is handed on with a context (`anyhow`), unannotated.
        let loaded = PLAIN_TENSORS.replace("WEIGHTS", "Tensor<B, 2>").replace(
            "let model: Gpt<Backend> = load_exploded(&Default::default());",
            "let model = Gpt::<Backend>::from_dir(dir()).context(\"params\").unwrap();",
        );
        assert_eq!(count("autodiff_forward_without_backward", None, &loaded), 0);
        let loaded_param = loaded.replace("pub weights: Tensor<B, 2>,", "pub weights: Param<Tensor<B, 2>>,");
        assert_eq!(count("autodiff_forward_without_backward", None, &loaded_param), 1);
    }

    /// burn 0.22: a reference model on the plain device beside a student on `device.autodiff()`,
    /// scored after training.
    const TWO_DEVICES: &str = r#"
use burn::prelude::*;
fn main() {
    let device = Device::default();
    let ad = device.autodiff();
    let reference = Mlp::new(784, 1024, &REF_DEVICE).load_file("reference.bin", &recorder(), &REF_DEVICE).unwrap();
    let mut student = Mlp::new(784, 128, &ad);
    let mut opt = AdamConfig::new().init();
    for (x, t) in batches(&ad) {
        let loss = (student.forward(x) - t).powf_scalar(2.0).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &student);
        student = opt.step(1e-3, student, grads);
    }
    let mut scores = Vec::new();
    for x in &inputs(&device) {
        scores.push(reference.forward(x.clone()).into_data());
    }
}
"#;

    #[test]
    fn a_model_built_on_the_plain_device_beside_an_autodiff_one_records_no_graph() {
        assert_eq!(count("autodiff_forward_without_backward", None, &TWO_DEVICES.replace("REF_DEVICE", "device")), 0);
        assert_eq!(
            crate::rules::testing::lines("autodiff_forward_without_backward", &TWO_DEVICES.replace("REF_DEVICE", "ad")),
            vec![16]
        );
        // Built on the plain device, then moved to the autodiff one.
        let forked = TWO_DEVICES.replace("REF_DEVICE", "device").replace(".unwrap();\n", ".unwrap().fork(&ad);\n");
        assert_ne!(forked, TWO_DEVICES.replace("REF_DEVICE", "device"));
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &forked), vec![16]);
    }

    /// A validation pass in the epoch loop of a training loop: its loss is read to the host, and
    /// the backward of the batches runs on other forwards.
    const VALIDATION_PASS: &str = r#"
use burn::tensor::backend::AutodiffBackend;
fn fit<B: AutodiffBackend>(mut model: Net<B>, optim: &mut O, batches: Vec<(Tensor<B, 2>, Tensor<B, 2>)>, test_x: Tensor<B, 2>, test_y: Tensor<B, 2>) -> Net<B> {
    for epoch in 0..100 {
        for (x, y) in batches.iter() {
            let pred = model.forward(x.clone());
            let loss = model.mse(pred, y.clone());
            let grads = loss.backward();
            model = optim.step(1e-3, model.clone(), GradientsParams::from_grads(grads, &model));
        }
        let val = model.forward(test_x.clone());
        let err = (val - test_y.clone()).powf_scalar(2.0).mean();
        let err = to_f64(&err);
        println!("{epoch} {err}");
    }
    model
}

fn to_f64<B: Backend>(t: &Tensor<B, 1>) -> f64 {
    t.clone().into_scalar().elem::<f64>()
}
"#;

    /// `act()` returns a host action between training steps on the same agent: the step's own
    /// backward sweeps its one forward.
    const ACT_BETWEEN_LEARNS: &str = r#"
use burn::tensor::backend::AutodiffBackend;
struct Agent<B: AutodiffBackend> { net: Net<B>, optim: O }
impl<B: AutodiffBackend> Agent<B> {
    fn act(&self, obs: Tensor<B, 2>) -> usize {
        self.net.forward(obs).argmax(1).into_scalar() as usize
    }
    fn learn(&mut self, batch: Batch<B>) {
        let loss = self.net.forward(batch.obs).sub(batch.target).powf_scalar(2.0).mean();
        let grads = loss.backward();
        self.net = self.optim.step(1e-3, self.net.clone(), GradientsParams::from_grads(grads, &self.net));
    }
}
fn run<B: AutodiffBackend>(agent: &mut Agent<B>, env: &mut Env<B>, steps: usize) {
    for _ in 0..steps {
        let a = agent.act(env.obs());
        env.step(a);
        agent.learn(env.batch());
    }
}
"#;

    #[test]
    fn reports_a_validation_pass_beside_the_loop_that_trains() {
        let text = crate::rules::testing::messages("autodiff_forward_without_backward", VALIDATION_PASS);
        assert_eq!(text.len(), 1, "{text:?}");
        assert!(text[0].contains("whose output no backward reaches"), "{text:?}");
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", VALIDATION_PASS), vec![11]);
        assert_eq!(count("autodiff_forward_without_backward", None, ACT_BETWEEN_LEARNS), 0);
        // On `valid()`, nothing records a graph.
        let fixed = VALIDATION_PASS.replace(
            "let val = model.forward(test_x.clone());",
            "let val = model.valid().forward(test_x.clone().inner());",
        );
        assert_eq!(count("autodiff_forward_without_backward", None, &fixed), 0);
    }

    /// Forwards that reach the backward through values the model follows: a helper's tuple, a
    /// detached target in the loss, a closure handed to a function that backpropagates, a value
    /// kept past the iteration.
    const REACHES_THE_BACKWARD: &str = r#"
use burn::tensor::backend::AutodiffBackend;
fn ppo<B: AutodiffBackend>(mut agent: Agent<B>, optim: &mut O, batches: Vec<Batch<B>>, n: usize) -> Agent<B> {
    let mut last = None;
    for b in batches {
        let (logits, v) = if b.dense {
            let (logits, v) = agent.policy_value(b.obs.clone());
            (logits, v)
        } else {
            agent.policy_value(b.obs.clone())
        };
        let (lp, ent) = log_prob(logits, b.actions.clone());
        let target = agent.value(b.next.clone()).detach();
        let parts = losses(lp, ent, v, target);
        let printed = parts.total.clone().into_scalar();
        println!("{printed}");
        let grads = parts.total.backward();
        agent = optim.step(1e-3, agent.clone(), GradientsParams::from_grads(grads, &agent));
        let kept = agent.value(b.obs.clone());
        last = Some(kept);
        let results = parallel_grads(&agent, &b, &|m, batch| {
            let loss = m.value(batch.obs.clone()).mean();
            let shown = loss.clone().into_scalar();
            (loss, shown)
        });
        apply(results);
    }
    let _ = last;
    agent
}
fn log_prob<B: Backend>(logits: Tensor<B, 2>, a: Tensor<B, 1, Int>) -> (Tensor<B, 1>, Tensor<B, 1>) {
    (logits.clone().gather(1, a.unsqueeze_dim(1)).squeeze(1), logits.mean_dim(1).squeeze(1))
}
"#;

    #[test]
    fn leaves_forwards_that_reach_the_backward_alone() {
        assert_eq!(count("autodiff_forward_without_backward", None, REACHES_THE_BACKWARD), 0);
    }

    /// `main` binds what a crate function returns, declared with an autodiff backend alias, and
    /// hands it to a generic forecaster whose loop runs no backward.
    const RETURNED_AUTODIFF: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
type Ad = Autodiff<NdArray>;
fn train(series: &[f32], d: &<Ad as Backend>::Device) -> Forecaster<Ad> {
    let mut model = Forecaster::<Ad>::new(d);
    for _ in 0..10 {
        let loss = model.loss(series, d);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = model.step(grads);
    }
    model
}
fn forecast<B: Backend>(model: &Forecaster<B>, history: &[f32], horizon: usize, d: &B::Device) -> Vec<f32> {
    let mut out = Vec::new();
    for _ in 0..horizon {
        let x = window(history, &out, d);
        out.push(model.forward(x).into_scalar().elem::<f32>());
    }
    out
}
fn main() {
    let d = Default::default();
    let series = load();
    let model = train(&series, &d);
    for origin in 0..1000 {
        let preds = forecast(&model, &series[..origin], 24, &d);
        report(&preds);
    }
}
"#;

    #[test]
    fn a_local_bound_to_a_function_returning_an_autodiff_model_is_autodiff() {
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", RETURNED_AUTODIFF), vec![18]);
        let valid =
            RETURNED_AUTODIFF.replace("let model = train(&series, &d);", "let model = train(&series, &d).valid();");
        assert_ne!(valid, RETURNED_AUTODIFF);
        assert_eq!(count("autodiff_forward_without_backward", None, &valid), 0);
        // A model loaded into a module built for the autodiff backend alias.
        let loaded = RETURNED_AUTODIFF.replace(
            "let model = train(&series, &d);",
            "let model = Forecaster::<Ad>::new(&d).load_file(\"model\", &CompactRecorder::new(), &d).expect(\"trained\");",
        );
        assert_ne!(loaded, RETURNED_AUTODIFF);
        assert_eq!(count("autodiff_forward_without_backward", None, &loaded), 1);
        let plain = loaded.replace("Forecaster::<Ad>::new(&d)", "Forecaster::<NdArray>::new(&d)");
        assert_eq!(count("autodiff_forward_without_backward", None, &plain), 0);
    }

    /// A one-letter alias at the top of the file (`type B = Autodiff<Wgpu>;`) names the backend
    /// in the file's free functions that declare no `B` of their own.
    const SHORTHAND_ALIAS: &str = r#"
use burn::backend::{Autodiff, Wgpu};
use burn::prelude::*;
type B = Autodiff<Wgpu>;
pub struct Cnn<B: Backend> { head: Linear<B> }
impl<B: Backend> Cnn<B> {
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> { self.head.forward(x) }
}
fn train(data: &Data, device: &<B as Backend>::Device) -> Cnn<B> {
    let mut model = Cnn::<B>::new(device);
    for (x, y) in data.batches(device) {
        let loss = model.forward(x).sub(y).powf_scalar(2.0).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = step(model, grads);
    }
    model
}
fn main() {
    let device = Default::default();
    let model = train(&load("train"), &device);
    let mut correct = 0;
    for (x, y) in load("test").batches(&device) {
        correct += score(model.forward(x), y);
    }
    println!("{correct}");
}
"#;

    #[test]
    fn a_one_letter_alias_of_the_file_names_the_backend_of_its_free_functions() {
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", SHORTHAND_ALIAS), vec![23]);
        // Not an impl's method whose `B` is the impl's own parameter.
        let method = SHORTHAND_ALIAS
            .replace(
                "fn train(data: &Data, device: &<B as Backend>::Device) -> Cnn<B> {",
                "impl<B: Backend> Trainer<B> {\n    fn train(data: &Data, device: &B::Device) -> Cnn<B> {",
            )
            .replace("    model\n}\n", "    model\n}\n}\n")
            .replace("let model = train(", "let model = Trainer::train(");
        assert_ne!(method, SHORTHAND_ALIAS);
        assert_eq!(count("autodiff_forward_without_backward", None, &method), 0);
        // Nor a free function generic over its own `B`.
        let generic = SHORTHAND_ALIAS.replace(
            "fn train(data: &Data, device: &<B as Backend>::Device)",
            "fn train<B: Backend>(data: &Data, device: &B::Device)",
        );
        assert_ne!(generic, SHORTHAND_ALIAS);
        assert_eq!(count("autodiff_forward_without_backward", None, &generic), 0);
        // Nor when the file's `B` is the plain backend.
        let plain = SHORTHAND_ALIAS.replace("type B = Autodiff<Wgpu>;", "type B = Wgpu;");
        assert_eq!(count("autodiff_forward_without_backward", None, &plain), 0);
    }

    /// burn-train 0.20 on: `SupervisedTraining::launch(learner)` hands back the trained model
    /// as the inference module (`LearningResult<InferenceModel<LC>>`).
    const LAUNCHED: &str = r#"
use burn::tensor::backend::{AutodiffBackend, Backend};
pub fn run<B: AutodiffBackend>(device: B::Device, items: &[Item]) -> f32 {
    let model = ModelConfig::new().init::<B>(&device);
    let training = SupervisedTraining::new(ARTIFACTS, train_loader(), valid_loader()).num_epochs(10);
    let trained = TRAINED;
    score(&trained, &device, items)
}
fn score<B: Backend>(model: &Model<B>, device: &B::Device, items: &[Item]) -> f32 {
    let mut hits = 0.0;
    for item in items {
        let logits = model.forward(item.tensor(device));
        hits += logits.argmax(1).into_scalar().elem::<f32>();
    }
    hits
}
"#;

    #[test]
    fn a_launched_learner_hands_back_the_inference_module() {
        let launched = LAUNCHED.replace("TRAINED", "training.launch(Learner::new(model, adam(), scheduler())).model");
        assert_eq!(count("autodiff_forward_without_backward", None, &launched), 0);
        // The autodiff model itself, scored the same way, is reported (at the call).
        let tracked = LAUNCHED.replace("TRAINED", "model");
        assert_eq!(count("autodiff_forward_without_backward", None, &tracked), 1);
    }

    /// burn-train 0.19: `learner.fit(train, valid)` returns a `TrainingResult` whose `model` is
    /// the inference module; up to 0.18 it returned the trained autodiff model.
    const FITTED: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub fn train<B: AutodiffBackend>(device: B::Device, test: Loader) -> f64 {
    let learner = LearnerBuilder::new(ARTIFACTS).num_epochs(4).build(Net::<B>::new(&device), adam(), 1e-3);
    let result = learner.fit(train_loader(), valid_loader());
    let scored = MODEL;
    let mut correct = 0.0;
    for batch in test.iter() {
        let out = scored.forward(batch.images);
        correct += out.argmax(1).into_scalar().to_f64();
    }
    correct
}
"#;

    #[test]
    fn a_fitted_learner_hands_back_the_inference_module_in_burn_0_19() {
        use crate::BurnEra::{FitReturnsInference, OneGraph, TypedBackends};
        let fitted = FITTED.replace("MODEL", "&result.model");
        let count_in =
            |src: &str, era| crate::rules::testing::count_in_era("autodiff_forward_without_backward", src, era);
        assert_eq!(count_in(&fitted, FitReturnsInference), 0);
        // Up to 0.18, `fit` returned the trained autodiff model.
        let returned = FITTED.replace("MODEL", "result");
        assert_eq!(count_in(&returned, OneGraph), 1);
        // A `fit` the crate defines is its own, whatever it returns.
        let own = fitted.clone()
            + "pub struct Coach;\nimpl Coach {\n    pub fn fit<B: AutodiffBackend>(&self, a: Loader, b: Loader) -> Fitted<B> { todo!() }\n}\n";
        assert_eq!(count_in(&own, FitReturnsInference), 1);
        // The model that went into the learner is still the autodiff one.
        let before = FITTED.replace("MODEL", "Net::<B>::new(&device)");
        assert_eq!(count_in(&before, FitReturnsInference), 1);
        assert_eq!(count_in(&fitted, TypedBackends), 1, "0.20 on has no `Learner::fit`");
    }

    /// A trainer that hands each epoch's untracked model to a callback of its caller
    /// (`on_epoch(epoch, &self.net.valid())`): the closure's parameter holds the inner model.
    const EPOCH_CALLBACK: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::{AutodiffBackend, Backend};
type Ad = Autodiff<NdArray>;
pub struct Trainer<B: AutodiffBackend> { net: Net<B>, lr: f64 }
impl<B: AutodiffBackend> Trainer<B> {
    pub fn run(&mut self, epochs: usize, mut on_epoch: impl FnMut(usize, &Net<B::InnerBackend>)) {
        let mut optim = AdamConfig::new().init();
        for epoch in 0..epochs {
            let loss = self.net.forward(batch()).mean();
            let grads = GradientsParams::from_grads(loss.backward(), &self.net);
            self.net = optim.step(self.lr, self.net.clone(), grads);
            on_epoch(epoch, HANDED);
        }
    }
}
pub fn score<B: Backend>(net: &Net<B>, rows: &[Row]) -> f32 {
    rows.iter().map(|r| net.forward(r.tensor()).into_scalar().elem::<f32>()).sum()
}
fn main() {
    let rows = holdout();
    let mut trainer = Trainer::<Ad> { net: Net::new(&Default::default()), lr: 1e-3 };
    trainer.run(100, |epoch, model| {
        let val = score(model, &rows);
        println!("{epoch} {val}");
    });
}
"#;

    #[test]
    fn a_callback_handed_the_untracked_model_runs_no_graph() {
        let valid = EPOCH_CALLBACK.replace("HANDED", "&self.net.valid()");
        assert_eq!(count("autodiff_forward_without_backward", None, &valid), 0);
        // Handed the trained model itself, the callback's validation loop is on autodiff.
        let tracked = EPOCH_CALLBACK
            .replace("HANDED", "&self.net")
            .replace("impl FnMut(usize, &Net<B::InnerBackend>)", "impl FnMut(usize, &Net<B>)");
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &tracked), vec![18]);
        // Untracked at one call and not at another: not every call hands an inert model.
        let mixed = EPOCH_CALLBACK.replace("HANDED", "&self.net.valid());\n            on_epoch(epoch, &self.net");
        assert_eq!(count("autodiff_forward_without_backward", None, &mixed), 1);
    }

    /// A crate function whose declared result is on the inner backend (`-> Option<(f32,
    /// Net<B::InnerBackend>)>`, the best snapshot of an early stopper): what it hands back records
    /// no graph, however it was made.
    const INNER_RESULT: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::{AutodiffBackend, Backend};
pub fn fit<B: AutodiffBackend>(net: Net<B>, steps: usize) -> RESULT {
    let mut keeper = Keeper::default();
    let mut net = net;
    for step in 0..steps {
        net = train_step(net);
        keeper.offer(step as f32, || net.valid());
    }
    keeper.best
}
pub fn score<B: Backend>(net: &Net<B>, rows: &[Row]) -> f32 {
    rows.iter().map(|r| net.forward(r.tensor()).into_scalar().elem::<f32>()).sum()
}
fn main() {
    type Ad = Autodiff<NdArray>;
    let best = fit(Net::<Ad>::new(&Default::default()), 500);
    if let Some((_, net)) = best {
        println!("{}", score(&net, &holdout()));
    }
}
"#;

    #[test]
    fn a_result_declared_on_the_inner_backend_is_untracked() {
        let inner = INNER_RESULT.replace("RESULT", "Option<(f32, Net<B::InnerBackend>)>");
        assert_eq!(count("autodiff_forward_without_backward", None, &inner), 0);
        let qualified = INNER_RESULT.replace("RESULT", "Option<(f32, Net<<B as AutodiffBackend>::InnerBackend>)>");
        assert_eq!(count("autodiff_forward_without_backward", None, &qualified), 0);
        // Declared on the autodiff backend, or beside a model that may be: the forward is tracked.
        let tracked = INNER_RESULT.replace("RESULT", "Option<(f32, Net<B>)>");
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &tracked), vec![14]);
        let both = INNER_RESULT
            .replace("RESULT", "Option<(Net<B>, Net<B::InnerBackend>)>")
            .replace("if let Some((_, net)) = best", "if let Some((net, _)) = best");
        assert_eq!(count("autodiff_forward_without_backward", None, &both), 1);
    }

    /// Knowledge distillation: a teacher the crate builds apart and never trains again, run in
    /// every training step with its output detached (burn 0.19 on keeps its graphs: the
    /// step's backward sweeps only what hangs on the student's parameters).
    const TEACHER: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub struct Distiller<B: AutodiffBackend> {
    teacher: Mlp<B>,
    student: Option<Mlp<B>>,
    optim: Adam,
}
impl<B: AutodiffBackend> Distiller<B> {
    pub fn new(teacher: Mlp<B>, student: Mlp<B>) -> Self {
        Self { teacher: TEACHER_INIT, student: Some(student), optim: AdamConfig::new().init() }
    }
    SYNC
    pub fn train_step(&mut self, x: Tensor<B, 2>, y: Tensor<B, 1, Int>) -> f32 {
        let student = self.student.take().unwrap();
        let soft = TEACHER_FORWARD;
        let loss = kd(student.forward(x), soft, y);
        let value = loss.clone().into_scalar().elem::<f32>();
        let grads = GradientsParams::from_grads(loss.backward(), &student);
        self.student = Some(self.optim.step(1e-3, student, grads));
        value
    }
}
"#;

    fn teacher(init: &str, sync: &str, forward: &str) -> String {
        TEACHER.replace("TEACHER_INIT", init).replace("SYNC", sync).replace("TEACHER_FORWARD", forward)
    }

    #[test]
    fn a_module_no_step_trains_keeps_its_detached_forwards() {
        let leak = teacher("teacher", "", "self.teacher.forward(x.clone()).detach()");
        assert_eq!(count("autodiff_forward_without_backward", None, &leak), 1);
        assert_eq!(
            super::super::testing::messages("autodiff_forward_without_backward", &leak),
            ["forward pass on an autodiff module that no backward trains"]
        );
        // Through tensor ops and a host read, the same.
        let host = teacher("teacher", "", "self.teacher.forward(x.clone()).argmax(1).into_data()");
        assert_eq!(count("autodiff_forward_without_backward", None, &host), 1);
    }

    #[test]
    fn a_module_no_step_trains_run_by_a_helper_of_each_step_is_reported() {
        let helper = "fn soft(&self, x: Tensor<B, 2>) -> Tensor<B, 2> { self.teacher.forward(x).detach() }";
        let leak = teacher("teacher", helper, "self.soft(x.clone())");
        // Each training step calls the helper once the loop that calls `train_step` is seen.
        let driver = "\npub fn fit<B: AutodiffBackend>(d: &mut Distiller<B>, data: Vec<(Tensor<B, 2>, Tensor<B, 1, Int>)>) {\n    for (x, y) in data { d.train_step(x, y); }\n}\n";
        let lines = super::super::testing::lines("autodiff_forward_without_backward", &(leak.clone() + driver));
        assert_eq!(lines, [12]);
        // Without a loop calling the step, nothing says the helper runs every step.
        assert_eq!(count("autodiff_forward_without_backward", None, &leak), 0);
        // Untracked where it is built, the same helper records nothing.
        let untracked = teacher("teacher.no_grad()", helper, "self.soft(x.clone())") + driver;
        assert_eq!(count("autodiff_forward_without_backward", None, &untracked), 0);
    }

    #[test]
    fn a_module_made_untracked_synced_or_backpropagated_is_not_apart() {
        let forward = "self.teacher.forward(x.clone()).detach()";
        // Untracked where it is built.
        assert_eq!(count("autodiff_forward_without_backward", None, &teacher("teacher.no_grad()", "", forward)), 0);
        // A target network the crate refreshes from the trained one: assigned, or changed by
        // a method called as a statement, or lent `&mut` to a function.
        let assigned = "pub fn sync(&mut self, online: &Mlp<B>) { self.teacher = online.clone(); }";
        assert_eq!(count("autodiff_forward_without_backward", None, &teacher("teacher", assigned, forward)), 0);
        let by_method = "pub fn sync(&mut self, online: &Mlp<B>) { self.teacher.blend_from(online, 0.01); }";
        let with_method = teacher("teacher", by_method, forward)
            + "impl<B: AutodiffBackend> Mlp<B> { fn blend_from(&mut self, other: &Self, tau: f64) { self.l1 = blend(&self.l1, &other.l1, tau); } }";
        assert_eq!(count("autodiff_forward_without_backward", None, &with_method), 0);
        let lent = "pub fn sync(&mut self, online: &Mlp<B>) { polyak(online, &mut self.teacher, 0.01); }";
        assert_eq!(count("autodiff_forward_without_backward", None, &teacher("teacher", lent, forward)), 0);
        // Its output reaches the loss: the backward runs through its graph.
        let into_loss = teacher("teacher", "", "self.teacher.forward(x.clone())");
        assert_eq!(count("autodiff_forward_without_backward", None, &into_loss), 0);
    }

    #[test]
    fn burn_before_0_19_clears_the_graph_of_a_module_apart_with_any_backward() {
        let leak = teacher("teacher", "", "self.teacher.forward(x.clone()).detach()");
        assert_eq!(
            crate::rules::testing::count_in_era("autodiff_forward_without_backward", &leak, crate::BurnEra::Components),
            1
        );
        assert_eq!(
            crate::rules::testing::count_in_era("autodiff_forward_without_backward", &leak, crate::BurnEra::OneGraph),
            0
        );
    }

    /// A training function returns its model beside a report of host numbers, one of them
    /// computed on the model made untracked (`validate(&model.valid(), ..)`): the model handed
    /// back is still the tracked one, and a sampler built on it afterwards runs on autodiff.
    const TRAINED_WITH_REPORT: &str = r#"
use burn::prelude::*;
use burn::backend::{Autodiff, NdArray};
use burn::module::AutodiffModule;
use burn::tensor::backend::AutodiffBackend;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
type TrainBackend = Autodiff<NdArray>;
pub struct Report { pub loss: f32, pub val: f32 }
fn validate<B: Backend>(model: &Net<B>, x: Tensor<B, 2>) -> f32 {
    model.forward(x).mean().into_scalar().elem::<f32>()
}
fn train<B: AutodiffBackend>(device: &B::Device, steps: usize) -> (Net<B>, Report) {
    let mut model: Net<B> = NetConfig::new().init(device);
    let mut optim = AdamConfig::new().init();
    let mut last = 0.0;
    for _ in 0..steps {
        let loss = model.forward(Tensor::zeros([4, 8], device)).mean();
        last = loss.clone().into_scalar().elem::<f32>();
        model = optim.step(1e-3, model.clone(), GradientsParams::from_grads(loss.backward(), &model));
    }
    let val = VALIDATED;
    (model, Report { loss: last, val })
}
pub struct Sampler<'a, B: Backend> { model: &'a Net<B> }
impl<'a, B: Backend> Sampler<'a, B> {
    pub fn new(model: &'a Net<B>) -> Self { Self { model } }
    pub fn generate(&mut self, n: usize, device: &B::Device) -> f32 {
        let mut acc = 0.0;
        for _ in 0..n {
            acc += self.model.forward(Tensor::zeros([1, 8], device)).mean().into_scalar().elem::<f32>();
        }
        acc
    }
}
pub fn run(n: usize) {
    let device = Default::default();
    let (model, report) = train::<TrainBackend>(&device, 100);
    let mut sampler = Sampler::new(&model);
    println!("{} {}", report.val, sampler.generate(n, &device));
}
"#;

    #[test]
    fn a_host_report_beside_the_trained_model_leaves_it_tracked() {
        let lines = |validated: &str| {
            crate::rules::testing::lines(
                "autodiff_forward_without_backward",
                &TRAINED_WITH_REPORT.replace("VALIDATED", validated),
            )
        };
        assert_eq!(lines("validate(&model.valid(), Tensor::zeros([4, 8], device))"), vec![30]);
        assert_eq!(lines("1.0"), vec![30]);
    }

    /// Agents acting on their autodiff nets every step, then each learning (a backward) in a
    /// loop over the agents within the same step; a frozen opponent keeps the trait's no-op `learn`.
    const AGENTS_LEARN_IN_INNER_LOOP: &str = r#"
use burn::prelude::*;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::backend::AutodiffBackend;
use burn::optim::{adaptor::OptimizerAdaptor, Adam, GradientsParams, Optimizer};
#[derive(Module, Debug)]
pub struct Net<B: Backend> { l: Linear<B> }
impl<B: Backend> Net<B> {
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> { self.l.forward(x) }
}
pub trait Agent {
    fn act(&mut self, obs: &[f32]) -> usize;
    fn learn(&mut self, _reward: f32) -> Option<f32> DEFAULT
}
pub struct Learner<B: AutodiffBackend> { net: Net<B>, opt: OptimizerAdaptor<Adam, Net<B>, B>, device: B::Device }
impl<B: AutodiffBackend> Agent for Learner<B> {
    fn act(&mut self, _obs: &[f32]) -> usize {
        self.net.forward(Tensor::zeros([1, 4], &self.device)).argmax(1).into_scalar().elem::<i64>() as usize
    }
    fn learn(&mut self, reward: f32) -> Option<f32> {
        let loss = self.net.forward(Tensor::zeros([1, 4], &self.device)).mean() * reward;
        let grads = GradientsParams::from_grads(loss.backward(), &self.net);
        self.net = self.opt.step(1e-3, self.net.clone(), grads);
        None
    }
}
FROZEN
type TrainBackend = burn::backend::Autodiff<burn::backend::NdArray>;
pub fn run(mut learners: Vec<Learner<TrainBackend>>, steps: usize) {
    for _ in 0..steps {
        BEFORE
        let a = learners[0].act(&[0.0]);
        AFTER
    }
}
"#;

    /// An opponent that acts on an autodiff net and keeps the trait's no-op `learn` (the trait
    /// has that default only with it).
    const FROZEN: &str = r#"pub struct Frozen<B: AutodiffBackend> { net: Net<B>, device: B::Device }
impl<B: AutodiffBackend> Agent for Frozen<B> {
    fn act(&mut self, _obs: &[f32]) -> usize {
        self.net.forward(Tensor::zeros([1, 4], &self.device)).argmax(1).into_scalar().elem::<i64>() as usize
    }
}"#;

    #[test]
    fn a_backward_later_in_the_same_iteration_sweeps_the_forward() {
        let lines = |frozen: &str, before: &str, after: &str| {
            crate::rules::testing::lines(
                "autodiff_forward_without_backward",
                &AGENTS_LEARN_IN_INNER_LOOP
                    .replace("DEFAULT", if frozen.is_empty() { ";" } else { "{ None }" })
                    .replace("FROZEN", frozen)
                    .replace("BEFORE", before)
                    .replace("AFTER", after),
            )
        };
        let learn = "for agent in learners.iter_mut() { agent.learn(1.0); }";
        // Each agent learns after acting, in the same step: swept before the next step.
        assert!(lines("", "", learn).is_empty());
        // Acting after the learning of the step (the place of a validation pass after the
        // loop over the batches): its graph waits for the next step's backward.
        assert_eq!(lines("", learn, ""), vec![32]);
        // With an opponent that keeps the no-op default, `learn` may or may not run backward:
        // a loop around it is not taken for one that never does.
        assert!(lines(FROZEN, "", learn).is_empty());
        assert!(lines(FROZEN, learn, "").is_empty());
        assert_eq!(lines(FROZEN, "", ""), vec![37]);
    }

    /// A monitor that runs the trained model on a probe set after each step and keeps what it
    /// computes in its log.
    const MONITOR_KEEPS_OUTPUTS: &str = r#"
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
pub struct Monitor<B: Backend> { probe: Tensor<B, 2>, log: Vec<Tensor<B, 1>> }
impl<B: Backend> Monitor<B> {
    pub fn observe(&mut self, model: &Net<B>) {
        let out = model.forward(self.probe.clone()).mean();
        self.log.push(KEPT);
    }
    RESET
}
pub fn train<B: AutodiffBackend>(mut model: Net<B>, data: Vec<Tensor<B, 2>>, mut monitor: Monitor<B>) {
    let mut optim = AdamConfig::new().init();
    for x in data {
        let loss = model.forward(x).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(1e-3, model, grads);
        monitor.observe(&model);
    }
}
"#;

    #[test]
    fn outputs_a_method_keeps_for_good_are_never_swept() {
        let lines = |kept: &str, reset: &str| {
            crate::rules::testing::lines(
                "autodiff_forward_without_backward",
                &MONITOR_KEEPS_OUTPUTS.replace("KEPT", kept).replace("RESET", reset),
            )
        };
        assert_eq!(lines("out", ""), vec![19]);
        // Host values only.
        assert!(lines("Tensor::from_floats([out.into_scalar().elem::<f32>()], &self.probe.device())", "").is_empty());
        // A buffer some method of the type empties (an on-policy agent's update takes it).
        assert!(
            lines("out", "pub fn drain(&mut self) -> Vec<Tensor<B, 1>> { self.log.drain(..).collect() }").is_empty()
        );
        assert!(lines("out", "pub fn clear(&mut self) { self.log.clear(); }").is_empty());
        assert!(
            lines("out", "pub fn take(&mut self) -> Vec<Tensor<B, 1>> { std::mem::take(&mut self.log) }").is_empty()
        );
        assert!(lines("out", "pub fn reset(&mut self) { self.log = Vec::new(); }").is_empty());
    }

    /// Imagined trajectories: a helper pushes each step's state (computed from the last one),
    /// sums the rewards of all of them in a second loop and returns the sum, which its caller
    /// backpropagates.
    const IMAGINED_RETURNS: &str = r#"
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
pub fn imagine<B: Backend>(model: &Dynamics<B>, actor: &Actor<B>, start: Tensor<B, 2>, horizon: usize) -> Tensor<B, 1> {
    let mut states = vec![start];
    for _ in 0..horizon {
        let s = states.last().unwrap().clone();
        let a = actor.forward(s.clone());
        states.push(model.forward(s, a));
    }
    let mut total = model.reward(states[0].clone());
    for s in states.iter().skip(1) {
        total = total + model.reward(s.clone());
    }
    total
}
pub fn train<B: AutodiffBackend>(model: Dynamics<B>, mut actor: Actor<B>, starts: Vec<Tensor<B, 2>>) {
    let mut optim = AdamConfig::new().init();
    for start in starts {
        let ret = imagine(&model, &actor, start, 15);
        USE
    }
}
"#;

    #[test]
    fn a_trajectory_returned_whole_to_a_backward_is_swept_by_it() {
        let lines = |used: &str| {
            crate::rules::testing::lines("autodiff_forward_without_backward", &IMAGINED_RETURNS.replace("USE", used))
        };
        let backward = "let grads = GradientsParams::from_grads(ret.mean().neg().backward(), &actor); actor = optim.step(1e-3, actor, grads);";
        assert!(lines(backward).is_empty());
        // Handed to a function that runs the backward on it as it is.
        let apply = "\npub fn apply<B: AutodiffBackend, O: Optimizer<Actor<B>, B>>(actor: Actor<B>, optim: &mut O, loss: Tensor<B, 1>) -> Actor<B> {\n    let grads = GradientsParams::from_grads(loss.backward(), &actor);\n    optim.step(1e-3, actor, grads)\n}\n";
        let handed = IMAGINED_RETURNS.replace("USE", "actor = apply(actor, &mut optim, ret.mean().neg());") + apply;
        assert!(crate::rules::testing::lines("autodiff_forward_without_backward", &handed).is_empty());
        // Read to the host only: no backward runs through the trajectory.
        assert_eq!(lines("println!(\"{}\", ret.into_scalar());"), vec![9]);
        // The rewards collected into a `Vec` first (a loop that pushes them, or an iterator's
        // `map(..).collect()`), and summed by a loop or by `reduce`: the same trajectory.
        let sum_loop = "    let mut total = model.reward(states[0].clone());\n    for s in states.iter().skip(1) {\n        total = total + model.reward(s.clone());\n    }\n    total\n";
        assert!(IMAGINED_RETURNS.contains(sum_loop));
        let pushed = "    let mut rewards = Vec::new();\n    for s in states.iter().skip(1) { rewards.push(model.reward(s.clone())); }\n";
        let collected =
            "    let rewards: Vec<Tensor<B, 1>> = states.iter().skip(1).map(|s| model.reward(s.clone())).collect();\n";
        let summed = "    let mut total = rewards[0].clone();\n    for r in rewards.into_iter().skip(1) { total = total + r; }\n    total\n";
        let reduced = "    rewards.into_iter().reduce(|acc, r| acc + r).unwrap()\n";
        for (collect, sum) in [(pushed, summed), (collected, summed), (pushed, reduced), (collected, reduced)] {
            let src = IMAGINED_RETURNS.replace(sum_loop, &format!("{collect}{sum}"));
            let lint = |used: &str| {
                crate::rules::testing::lines("autodiff_forward_without_backward", &src.replace("USE", used))
            };
            assert!(lint(backward).is_empty(), "{collect}{sum}");
            assert_eq!(lint("println!(\"{}\", ret.into_scalar());"), vec![9], "{collect}{sum}");
        }
    }

    /// An A2C agent: `collect` runs the policy on every step and pushes the log-probabilities
    /// into its storage; `update` drains the storage into the loss it backpropagates.
    const ROLLOUT_STORAGE: &str = r#"
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::optim::{adaptor::OptimizerAdaptor, Adam, GradientsParams, Optimizer};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::log_softmax;
#[derive(Module, Debug)]
pub struct Net<B: Backend> { l: Linear<B> }
impl<B: Backend> Net<B> {
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> { self.l.forward(x) }
}
pub struct Storage<B: Backend> { pub log_probs: Vec<Tensor<B, 2>> }
pub struct A2c<B: AutodiffBackend> { net: Net<B>, opt: OptimizerAdaptor<Adam, Net<B>, B>, storage: Storage<B>, device: B::Device }
impl<B: AutodiffBackend> A2c<B> {
    pub fn collect(&mut self, steps: usize) {
        for _ in 0..steps {
            let logits = self.net.forward(Tensor::zeros([8, 4], &self.device));
            self.storage.log_probs.push(log_softmax(logits, 1));
        }
    }
    pub fn update(&mut self) {
        let logp = Tensor::cat(TAKEN, 0);
        let loss = logp.mean();
        let grads = GradientsParams::from_grads(loss.backward(), &self.net);
        self.net = self.opt.step(1e-3, self.net.clone(), grads);
    }
}
"#;

    #[test]
    fn a_rollout_into_a_buffer_the_update_empties_is_swept_by_it() {
        let lines = |taken: &str| {
            crate::rules::testing::lines("autodiff_forward_without_backward", &ROLLOUT_STORAGE.replace("TAKEN", taken))
        };
        assert!(lines("self.storage.log_probs.drain(..).collect()").is_empty());
        assert!(lines("std::mem::take(&mut self.storage.log_probs)").is_empty());
        // Read, never emptied: every rollout's graph stays in the buffer.
        assert_eq!(lines("self.storage.log_probs.clone()"), vec![17]);
    }

    /// An agent whose `act` runs the autodiff net only when exploring (the greedy branch runs
    /// `valid()`), called by an evaluation loop and a rollout with the values in `ARGS`.
    const GATED_ACT: &str = r#"
use burn::module::AutodiffModule;
use burn::tensor::backend::AutodiffBackend;
#[derive(Clone, Copy, PartialEq)]
pub enum ActMode { Explore, Exploit, Replay }
pub struct Agent<B: AutodiffBackend> { net: Net<B>, device: B::Device }
impl<B: AutodiffBackend> Agent<B> {
    pub fn act(&self, obs: Tensor<B, 2>, explore: bool) -> usize {
        if !explore {
            return self.net.valid().forward(obs.inner()).argmax(1).into_scalar() as usize;
        }
        self.net.forward(obs).argmax(1).into_scalar() as usize
    }
    pub fn act_in(&self, obs: Tensor<B, 2>, mode: ActMode) -> usize {
        match mode {
            ActMode::Explore | ActMode::Replay => self.net.forward(obs).argmax(1).into_scalar() as usize,
            _ => self.net.valid().forward(obs.inner()).argmax(1).into_scalar() as usize,
        }
    }
    pub fn act_if(&self, obs: Tensor<B, 2>, mode: &ActMode) -> usize {
        if matches!(mode, ActMode::Exploit) {
            self.net.valid().forward(obs.inner()).argmax(1).into_scalar() as usize
        } else {
            self.net.forward(obs).argmax(1).into_scalar() as usize
        }
    }
}
pub struct Session<B: AutodiffBackend> { agent: Agent<B> }
impl<B: AutodiffBackend> Session<B> {
    pub fn act(&mut self, obs: Tensor<B, 2>, mode: ActMode) -> usize {
        self.agent.act_in(obs, mode)
    }
}
pub fn evaluate<B: AutodiffBackend>(agent: &Agent<B>, session: &mut Session<B>, episodes: usize, device: &B::Device) -> usize {
    let mut total = 0;
    for _ in 0..episodes {
        total += CALL;
    }
    total
}
"#;

    #[test]
    fn a_call_that_closes_the_branch_of_a_forward_runs_none() {
        let lines = |call: &str| {
            crate::rules::testing::lines("autodiff_forward_without_backward", &GATED_ACT.replace("CALL", call))
        };
        let obs = "Tensor::zeros([1, 4], device)";
        // A constant that takes the greedy branch: no forward on the autodiff net.
        assert!(lines(&format!("agent.act({obs}, false)")).is_empty());
        assert!(lines(&format!("agent.act_in({obs}, ActMode::Exploit)")).is_empty());
        assert!(lines(&format!("agent.act_if({obs}, &ActMode::Exploit)")).is_empty());
        // ... also through a method that hands its own parameter on.
        assert!(lines(&format!("session.act({obs}, ActMode::Exploit)")).is_empty());
        // A constant that takes the autodiff branch, or a value not known here: reported.
        assert_eq!(lines(&format!("agent.act({obs}, true)")), vec![37]);
        assert_eq!(lines(&format!("agent.act_in({obs}, ActMode::Replay)")), vec![37]);
        assert_eq!(lines(&format!("agent.act_if({obs}, &ActMode::Explore)")), vec![37]);
        assert_eq!(lines(&format!("session.act({obs}, ActMode::Explore)")), vec![37]);
        assert_eq!(lines(&format!("agent.act({obs}, episodes > 3)")), vec![37]);
    }

    /// A model built with an autodiff backend named in its type's generic arguments, handed to
    /// a training function, then to a generic indexing helper.
    const BUILT_WITH_ALIAS: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::{AutodiffBackend, Backend};
type Cpu = NdArray<f32>;
type Train = Autodiff<Cpu>;
pub fn build_index<B: Backend>(tower: &Tower<B>, n: usize, dev: &B::Device) -> Vec<f32> {
    let mut v = Vec::new();
    for _ in 0..n {
        let emb = tower.forward(Tensor::zeros([4, 4], dev));
        v.extend(emb.into_data().to_vec::<f32>().unwrap());
    }
    v
}
fn train<B: AutodiffBackend>(model: Tower<B>, dev: &B::Device) -> Tower<B> {
    let grads = model.forward(Tensor::zeros([4, 4], dev)).sum().backward();
    model
}
fn main() {
    let dev = Default::default();
    let model = train(BUILT, &dev);
    println!("{}", build_index(&model, 100, &dev).len());
}
"#;

    #[test]
    fn a_model_built_with_an_autodiff_backend_in_its_type_arguments_is_autodiff() {
        let lines = |built: &str| {
            crate::rules::testing::lines("autodiff_forward_without_backward", &BUILT_WITH_ALIAS.replace("BUILT", built))
        };
        assert_eq!(lines("Tower::<Train>::new(&dev)"), vec![9]);
        assert_eq!(lines("Tower::<Autodiff<Cpu>>::new(&dev)"), vec![9]);
        // No backend named: nothing says the index is built on an autodiff model.
        assert!(lines("Tower::new(&dev)").is_empty());
        assert!(lines("Tower::<Cpu>::new(&dev)").is_empty());
    }

    /// A training function that keeps its best checkpoint with a tuple assignment beside a
    /// validation score computed on `model.valid()`, and hands back the autodiff model; `main`
    /// predicts with it in a loop.
    const BEST_CHECKPOINT: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::{AutodiffBackend, Backend};
type Train = Autodiff<NdArray>;
pub struct Trained<B: AutodiffBackend> { pub model: Net<B>, pub best: f32 }
fn validate<B: Backend>(model: &Net<B>, device: &B::Device) -> f32 {
    model.forward(probe::<B>(device)).mean().into_scalar().elem::<f32>()
}
pub fn fit<B: AutodiffBackend>(device: &B::Device, xs: Vec<Tensor<B, 2>>) -> Trained<B> {
    let mut model = Net::<B>::new(device);
    let mut optim = AdamConfig::new().init();
    let (mut best, mut best_record) = (f32::MAX, model.clone().into_record());
    for x in xs {
        let loss = model.forward(x.clone()).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(1e-3, model, grads);
        let err = validate(&model.valid(), device);
        if err < best {
            (best, best_record) = (err, model.clone().into_record());
        }
    }
    Trained { model: model.load_record(best_record), best }
}
fn main() {
    let device = Default::default();
    let trained = fit::<Train>(&device, batches(&device));
    let model = MODEL;
    for x in test_batches(&device) {
        println!("{}", model.forward(x).mean().into_scalar());
    }
}
"#;

    #[test]
    fn a_model_handed_back_beside_a_checkpoint_kept_by_tuple_assignment_stays_autodiff() {
        // The validation score on `model.valid()` is a host number: it does not make the
        // checkpoint beside it, or the model loaded from that checkpoint, inert.
        let tracked = BEST_CHECKPOINT.replace("MODEL", "trained.model");
        assert_eq!(super::super::testing::lines("autodiff_forward_without_backward", &tracked), vec![29]);
        let valid = BEST_CHECKPOINT.replace("MODEL", "trained.model.valid()");
        assert_eq!(count("autodiff_forward_without_backward", None, &valid), 0);
    }

    /// Gradient accumulation: a helper collects one loss per micro-batch with an iterator's
    /// closure and returns them; the training step concatenates them and runs one backward.
    const COLLECTED_LOSSES: &str = r#"
use burn::tensor::backend::AutodiffBackend;
pub struct Tuner<B: AutodiffBackend> { model: Net<B>, accum: usize, device: B::Device }
impl<B: AutodiffBackend> Tuner<B> {
    fn window_losses(&self, start: u64) -> Vec<Tensor<B, 1>> {
        (0..self.accum as u64).map(|k| self.model.forward(batch::<B>(start + k, &self.device)).mean()).collect()
    }
    pub fn epoch(&mut self, windows: u64) -> f32 {
        let mut total = 0.0;
        for w in 0..windows {
            let losses = self.window_losses(w * 100);
            let loss = Tensor::cat(losses, 0).mean();
            total += loss.clone().into_scalar().elem::<f32>();
            STEP
        }
        total
    }
}
"#;

    #[test]
    fn losses_collected_by_a_closure_for_the_callers_backward_are_swept() {
        let step = "let grads = GradientsParams::from_grads(loss.backward(), &self.model);";
        assert_eq!(count("autodiff_forward_without_backward", None, &COLLECTED_LOSSES.replace("STEP", step)), 0);
        // No backward of what the helper returns: every micro-batch's graph stays in the store.
        assert_eq!(count("autodiff_forward_without_backward", None, &COLLECTED_LOSSES.replace("STEP", "")), 1);
    }

    /// A sampler module generic over the backend trait, called from `main` with the crate's
    /// `type Backend = Autodiff<NdArray>;` imported from a module of its own.
    fn lint_backend_crate(backend: &str, import: &str) -> Vec<(&'static str, usize)> {
        use crate::source::SourceFile;
        use std::{path::Path, sync::Arc};
        let main = format!(
            "mod backend;\nmod sample;\n{import}\nfn main() {{\n    let model = Lm::<Backend>::new();\n    \
             sample::generate(&model, 500);\n}}\n"
        );
        let sample = "use burn::tensor::backend::Backend;\npub fn generate<B: Backend>(model: &Lm<B>, n: usize) -> \
                      Vec<f32> {\n    let mut out = Vec::new();\n    for _ in 0..n {\n        let y = \
                      model.forward(model.last());\n        out.push(y.into_scalar());\n    }\n    out\n}\n";
        let files = [
            Arc::new(SourceFile::new(Path::new("src/main.rs"), main)),
            Arc::new(SourceFile::new(Path::new("src/backend.rs"), format!("pub type Backend = {backend};\n"))),
            Arc::new(SourceFile::new(Path::new("src/sample.rs"), sample.to_string())),
        ];
        let linter = crate::Linter { framework: Some(crate::Framework::Burn), ..Default::default() };
        linter
            .lint_sources(&files, None)
            .into_iter()
            .filter(|f| f.rule == "autodiff_forward_without_backward")
            .map(|f| ("autodiff_forward_without_backward", f.line))
            .collect()
    }

    #[test]
    fn the_crates_own_backend_alias_imported_from_its_module_is_autodiff() {
        let import = "use backend::Backend;";
        assert_eq!(lint_backend_crate("burn::backend::Autodiff<burn::backend::NdArray>", import).len(), 1);
        assert_eq!(
            lint_backend_crate("burn::backend::Autodiff<burn::backend::NdArray>", "use crate::backend::{Backend};")
                .len(),
            1
        );
        // The alias names a backend without autodiff: nothing is recorded.
        assert!(lint_backend_crate("burn::backend::NdArray", import).is_empty());
        // `Backend` imported from burn is the trait, whatever the crate aliases elsewhere.
        assert!(
            lint_backend_crate("burn::backend::Autodiff<burn::backend::NdArray>", "use burn::prelude::Backend;")
                .is_empty()
        );
    }

    /// An arena that plays a few moves a game with the training network, called round after
    /// round with no backward; the trainer also stores examples a frozen copy played.
    const ARENA: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::module::AutodiffModule;
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
type Ad = Autodiff<NdArray>;
const CELLS: usize = 9;
pub struct Example { pub board: [i8; CELLS], pub z: f32 }
pub struct Trainer<B: AutodiffBackend> { pub net: Net<B>, pub replay: Vec<Example> }
fn self_play<B: Backend>(net: &Net<B>) -> Vec<Example> {
    let z = net.forward(input()).into_scalar().elem::<f32>();
    vec![Example { board: [0; CELLS], z }]
}
fn play_round<B: AutodiffBackend>(t: &Trainer<B>) -> f32 {
    let mut total = 0.0;
    for _ply in 0..CELLS {
        total += t.net.forward(input()).into_scalar().elem::<f32>();
    }
    total
}
fn main() {
    let mut t = Trainer { net: Net::<Ad>::new(), replay: Vec::new() };
    let frozen = t.net.valid();
    let examples = self_play(&frozen);
    t.replay.extend(examples);
    ROUNDS
}
"#;

    #[test]
    fn a_short_loop_a_caller_runs_round_after_round_is_reported_at_the_call() {
        let rounds = ARENA.replace("ROUNDS", "for _round in 0..150 { play_round(&t); }");
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &rounds), vec![26]);
        // Played once: a handful of forwards, left alone.
        assert_eq!(count("autodiff_forward_without_backward", None, &ARENA.replace("ROUNDS", "play_round(&t);")), 0);
    }

    /// A differentiable rollout: a helper threads a state through a method that returns a tuple
    /// (`(next, onsets)`), keeps one element per step and returns them; the caller's loss is
    /// computed from what it returns.
    const THREADED_ROLLOUT: &str = r#"
use burn::tensor::backend::{AutodiffBackend, Backend};
impl<B: Backend> RateNet<B> {
    pub fn rates(&self, x: Tensor<B, 2>) -> Tensor<B, 2> { self.fc.forward(x) }
}
pub struct State<B: Backend> { s: Tensor<B, 2>, e: Tensor<B, 2> }
impl<B: Backend> State<B> {
    fn step(self, beta: Tensor<B, 2>) -> (Self, Tensor<B, 2>) {
        let onsets = self.e.clone() * 0.25;
        let next = Self { s: self.s - beta.clone(), e: self.e + beta - onsets.clone() };
        (next, onsets)
    }
}
pub fn simulate<B: Backend>(net: &RateNet<B>, init: State<B>, covs: &[Tensor<B, 2>]) -> Vec<Tensor<B, 2>> {
    let mut state = init;
    let mut out = Vec::new();
    for cov in covs {
        let beta = net.rates(cov.clone());
        let (next, onsets) = state.step(beta);
        out.push(onsets);
        state = next;
    }
    out
}
pub fn train<B: AutodiffBackend>(mut net: RateNet<B>, covs: &[Tensor<B, 2>], optim: &mut Adam) {
    for _ in 0..100 {
        let season = simulate(&net, State::seeded(), covs);
        let loss = LOSS;
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        net = optim.step(1e-3, net, grads);
    }
}
"#;

    #[test]
    fn a_rollout_threading_its_state_through_a_tuple_result_is_judged_at_its_backpropagating_caller() {
        let src = |loss: &str| THREADED_ROLLOUT.replace("LOSS", loss);
        // The kept element is computed from the threaded state, which carries the rates' graph:
        // the caller's backward sweeps every step's forward.
        assert_eq!(count("autodiff_forward_without_backward", None, &src("Tensor::cat(season, 0).mean()")), 0);
        // The caller backpropagates something else: the rollout's forwards pile up in its loop.
        let lines = crate::rules::testing::lines(
            "autodiff_forward_without_backward",
            &src("net.rates(covs[0].clone()).mean()"),
        );
        assert_eq!(lines, vec![18]);
    }

    /// Two modules each name their own backend `Wgpu`: the trainer's is autodiff, the
    /// evaluator thread's is burn's plain `Wgpu`.
    const SAME_ALIAS_TWICE: &str = r#"
mod optimizer {
    type Wgpu = burn::backend::Autodiff<burn::backend::Wgpu<f32, i32>>;
    pub fn train(mut model: Model<Wgpu>, batches: &[Batch], optim: &mut Adam) -> Model<Wgpu> {
        for b in batches {
            let loss = model.forward(b.x.clone()).mean();
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optim.step(1e-3, model, grads);
        }
        model
    }
}
mod selfplay {
    type Wgpu = EVAL_BACKEND;
    pub fn evaluator(inbox: Receiver<Msg>) {
        let device = Default::default();
        let model: Model<Wgpu> = ModelConfig::new().init(&device);
        loop {
            let req = inbox.recv().unwrap();
            req.reply(model.forward(req.x(&device)).into_data());
        }
    }
}
"#;

    #[test]
    fn an_alias_of_burns_own_backend_is_not_another_modules_alias_of_the_same_name() {
        let src = |b: &str| SAME_ALIAS_TWICE.replace("EVAL_BACKEND", b);
        assert_eq!(count("autodiff_forward_without_backward", None, &src("burn::backend::Wgpu<f32, i32>")), 0);
        // The evaluator on the autodiff backend: reported.
        let autodiff = src("burn::backend::Autodiff<burn::backend::Wgpu<f32, i32>>");
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &autodiff), vec![20]);
    }

    /// A PPO rollout of a constant horizon, each step's output read as host data, then the
    /// update's backward.
    const HORIZON_ROLLOUT: &str = r#"
use burn::backend::{Autodiff, NdArray};
const T_HORIZON: usize = HORIZON;
pub fn run(env: &mut Env, mut model: Ppo<Autodiff<NdArray>>, device: &NdArrayDevice) {
    for _episode in 0..10_000 {
        let mut done = false;
        while !done {
            for _ in 0..T_HORIZON {
                let p = model.pi(env.state(device));
                let a = sample(&p.into_data().to_vec::<f32>().unwrap());
                done = env.step(a);
                model.put_data(a);
                if done {
                    break;
                }
            }
            model.train_net();
        }
    }
}
impl<B: AutodiffBackend> Ppo<B> {
    pub fn pi(&self, x: Tensor<B, 2>) -> Tensor<B, 2> { self.fc.forward(x) }
    pub fn train_net(&mut self) {
        let loss = self.pi(self.batch()).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &self.fc);
        self.fc = self.optim.step(1e-3, self.fc.clone(), grads);
    }
}
"#;

    #[test]
    fn a_rollout_of_a_handful_of_steps_is_swept_by_the_update() {
        let src = |h: &str| HORIZON_ROLLOUT.replace("HORIZON", h);
        // 20 forwards wait for the update's backward, as a warm-up of at most 32 may.
        assert_eq!(count("autodiff_forward_without_backward", None, &src("20")), 0);
        assert_eq!(crate::rules::testing::lines("autodiff_forward_without_backward", &src("2048")), vec![9]);
    }

    /// A pseudo-labeller whose method is named like a tensor operation (`select`) keeps a running
    /// confidence of the model's outputs.
    const TENSOR_NAMED_METHOD: &str = r#"
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
pub struct Labeler<B: Backend> { total: Option<Tensor<B, 1>> }
impl<B: Backend> Labeler<B> {
    pub fn select(&mut self, model: &Net<B>, u: Tensor<B, 2>) -> Tensor<B, 2> {
        let conf = model.forward(u.clone()).max_dim(1).mean()KEPT;
        self.total = Some(match self.total.take() { Some(t) => t + conf, None => conf });
        u
    }
}
pub fn train<B: AutodiffBackend>(mut model: Net<B>, data: &[(Tensor<B, 2>, Tensor<B, 2>)], optim: &mut Adam) {
    let mut labeler = Labeler { total: None };
    for (x, u) in data {
        let picked = labeler.select(&model, u.clone());
        let loss = model.forward(x.clone()).mean() + model.forward(picked).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(1e-3, model, grads);
    }
}
"#;

    #[test]
    fn a_method_named_like_a_tensor_operation_is_the_types_own() {
        // burn: the outputs kept in the labeller are never backpropagated (the rule for burn's
        // kept forwards reports it).
        let rule = "autodiff_forward_without_backward";
        assert_eq!(crate::rules::testing::lines(rule, &TENSOR_NAMED_METHOD.replace("KEPT", "")), vec![15]);
        let detached = TENSOR_NAMED_METHOD.replace("KEPT", ".detach()");
        assert_eq!(count(rule, None, &detached), 0);
    }

    /// burn 0.22: after training on the autodiff device, a statistics struct the caller made
    /// (with `Default::default()` or a literal) evaluates the model it is handed.
    const STATS_BESIDE_MODEL: &str = r#"
use burn::prelude::*;
#[derive(Default)]
pub struct Stats { seen: usize, hits: usize }
impl Stats {
    fn evaluate(&mut self, model: &Net, xs: &[Tensor<2>]) {
        for x in xs {
            let p = model.forward(x.clone()).argmax(1).into_scalar::<i64>();
            self.seen += 1;
            self.hits += (p == 0) as usize;
        }
    }
}
fn main() {
    let device = Device::default().autodiff();
    let mut model = Net::new(&device);
    let mut opt = AdamConfig::new().init();
    for (x, t) in batches(&device) {
        let loss = (model.forward(x) - t).powf_scalar(2.0).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = opt.step(1e-3, model, grads);
    }
    let mut stats = STATS;
    stats.evaluate(&model, &holdout(&device));
}
"#;

    #[test]
    fn an_evaluation_by_a_stats_struct_handed_the_autodiff_model_is_reported() {
        let lines = |stats: &str| {
            crate::rules::testing::lines(
                "autodiff_forward_without_backward",
                &STATS_BESIDE_MODEL.replace("STATS", stats),
            )
        };
        assert_eq!(lines("Stats::default()"), vec![8]);
        assert_eq!(lines("Stats { seen: 0, hits: 0 }"), vec![8]);
    }
}
