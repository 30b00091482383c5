"""Layer 8, training: Lightning data module and module, callbacks, calibration, `train` and `pretrain`."""
