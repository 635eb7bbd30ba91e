//! A slab of records addressed by `u32` ids (fill records): freed ids are reused, so ids
//! stay small and the records stay in one vector.

pub(super) struct Slab<T> {
    items: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T> Slab<T> {
    pub(super) fn new() -> Slab<T> {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
    pub(super) fn insert(&mut self, t: T) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = Some(t);
                i
            }
            None => {
                self.items.push(Some(t));
                (self.items.len() - 1) as u32
            }
        }
    }
    pub(super) fn get_mut(&mut self, i: u32) -> Option<&mut T> {
        self.items.get_mut(i as usize).and_then(Option::as_mut)
    }
    pub(super) fn remove(&mut self, i: u32) -> Option<T> {
        let t = self.items.get_mut(i as usize)?.take();
        if t.is_some() {
            self.free.push(i);
        }
        t
    }
}
