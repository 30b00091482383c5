"""Layer 9, experiments: ablation grids of training runs, their tables and plots."""
