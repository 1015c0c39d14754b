"""Tree depths by pointer jumping: the one depth computation of the package.

Depth is the number of arcs from a word to the root (the root's depth 0; Omote et al. 2019, Sec. 3, whose
dependency-relative positions read it; subwords inherit their word's). Every caller flattens its trees into one
array of nodes, each pointing at its head and a root at itself, and :func:`jump_to_roots` doubles the pointers
until each node points at its root: about log2(depth) vectorised steps, no loop over sentences or words. The
callers: a CoNLL-U sentence's check (tree.py), a block of sentences read as arrays (conllu_blocks.py), a batch
in the collater (alignment/parent_strategies.py) and a self-parsing encoder's decoded trees on its device
(decoding.py). Works on numpy arrays and torch tensors alike and imports neither.
"""


def jump_to_roots(up, dist, longest=None, settle=True):
    """(dist, top): each node's number of arcs to ``top``, the node it reaches going up.

    ``up[i]`` is the index of node i's head (a root: i itself), ``dist[i]`` 1 for a node with a head and 0 for a
    root (integer arrays or tensors of one shape, 1-D). ``longest``: an upper bound of any path's length (the
    most words of one tree; default the number of nodes). In a forest, ``top`` is each node's root and ``dist``
    its depth; a node whose ``top`` is not a root is on, or leads into, a cycle. ``settle``: stop early once no
    pointer moves (a numpy caller; on a device each check would wait for it, so the model passes False and
    takes the ceil(log2(longest)) + 1 steps).
    """
    steps = max(1, len(up) if longest is None else int(longest)).bit_length() + 1
    for _ in range(steps):
        upper = up[up]
        if settle and bool((upper == up).all()):
            break
        dist = dist + dist[up]
        up = upper
    return dist, up
