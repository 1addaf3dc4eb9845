"""Does an in-place copy of a graph-carrying tensor into a long-lived buffer grow memory?

PyTorch's autograd is libtorch's (tch-rs calls the same C++), so the answer holds for tch.
Shape measured (a PPO-style trainer with preallocated rollout buffers):
  each iteration: a bootstrap value forward with gradients on, a GAE loop whose first step reads
  it, `adv.narrow(0, t*N, N).copy_(gae)` into a buffer allocated once, then an update on
  detached minibatches with backward and an optimizer step.
Variants (each in a fresh process):
  leak      copy_(gae) where gae carries the value forward's graph
  detach    copy_(gae.detach())
  nograd    the bootstrap forward under torch.no_grad()
  realloc   the buffer is allocated anew at the start of every iteration (a local, not a field)
  zero      adv.zero_() before refilling (the same buffer)
  detach_   adv.detach_() before refilling
Prints memory_allocated (CUDA) or live RSS (CPU) every `every` iterations and the length of
the buffer's grad_fn chain.
"""
import os, sys, resource, time
import torch

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

def chain_len(t, cap=300000):
    """Autograd nodes reachable from the buffer's grad_fn (capped)."""
    # The wrappers are kept alive in `held`: Python makes a new wrapper object for a node each time
    # it is reached, and an id() of a freed wrapper can be reused by the next one.
    seen, held, todo = set(), [], [t.grad_fn] if t.grad_fn is not None else []
    while todo and len(seen) < cap:
        fn = todo.pop()
        held.append(fn)
        if fn in seen:
            continue
        seen.add(fn)
        todo.extend(f for f, _ in fn.next_functions if f is not None)
    return len(seen)

def main(variant, device, iters, every):
    torch.manual_seed(0)
    T, N, D = 64, 16, 256
    net = torch.nn.Sequential(torch.nn.Linear(D, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1)).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=1e-4)
    adv = torch.zeros(T * N, device=device)
    values = torch.zeros(T * N, device=device)
    rewards = torch.randn(T * N, device=device)
    obs = torch.randn(T * N, D, device=device)
    for it in range(1, iters + 1):
        if variant == "realloc":
            adv = torch.zeros(T * N, device=device)
        elif variant == "zero":
            adv.zero_()
        elif variant == "detach_":
            adv.detach_()
        last_obs = torch.randn(N, D, device=device)
        if variant == "nograd":
            with torch.no_grad():
                last_value = net(last_obs).squeeze(-1)
        else:
            last_value = net(last_obs).squeeze(-1)
        gae = torch.zeros(N, device=device)
        for t in reversed(range(T)):
            nxt = last_value if t == T - 1 else values.narrow(0, (t + 1) * N, N)
            v = values.narrow(0, t * N, N)
            delta = rewards.narrow(0, t * N, N) + 0.99 * nxt - v
            gae = delta + 0.99 * 0.95 * gae
            src = gae.detach() if variant == "detach" else gae
            adv.narrow(0, t * N, N).copy_(src)
        idx = torch.randint(0, T * N, (256,), device=device)
        target = adv.detach()[idx] + values[idx]
        loss = ((net(obs[idx]).squeeze(-1) - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % every == 0 or it == 1:
            if device == "cuda":
                torch.cuda.synchronize()
                mem = torch.cuda.memory_allocated() / 2**20
            else:
                mem = rss_mb()
            print(f"{variant} {device} it={it} mem_mb={mem:.2f} graph_nodes={chain_len(adv)} requires_grad={adv.requires_grad}", flush=True)

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
