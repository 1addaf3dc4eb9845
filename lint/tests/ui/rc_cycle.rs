// Rc/Arc cycles among a crate's types.
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};
use std::sync::{Arc, Mutex};

// A tree whose parent link is strong.
struct Node {
    value: i32,
    parent: Option<Rc<RefCell<Node>>>, //~ rc_cycle
    children: Vec<Rc<RefCell<Node>>>,
}

// The Rust book's leaking list.
enum List {
    Cons(i32, RefCell<Rc<List>>), //~ rc_cycle
    Nil,
}

// A cycle through two types and a map.
struct Graph {
    layers: HashMap<String, Arc<Mutex<Layer>>>,
}
struct Layer {
    graph: Arc<Graph>, //~ rc_cycle
    weights: Vec<f32>,
}

// Not flagged: `Weak` breaks the cycle.
struct GoodNode {
    parent: RefCell<Weak<GoodNode>>,
    children: RefCell<Vec<Rc<GoodNode>>>,
}

// Not flagged: without interior mutability a cycle cannot be closed after construction.
struct Immutable {
    next: Option<Rc<Immutable>>,
}

// Not flagged: owned recursion (a Box tree) frees itself.
struct Expr {
    lhs: Option<Box<Expr>>,
    rhs: Option<Box<Expr>>,
}
