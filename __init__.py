"""pbbflow: exact branch-and-bound for the permutation flow-shop problem."""
