"""Lightning training: data module, LightningModule and the `train` entry point."""
