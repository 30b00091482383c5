"""Layer 1, config: experiment configs from YAML files split by concern, validated against a schema.

`choices` defines the task kinds, label problems and snap modes (str enums) every layer uses;
`schema` holds the dataclasses and the allowed values; `loading` reads a config file, merges its
`defaults:` parts and `--set` overrides, and checks every value before any work starts, with
`yaml12` (YAML 1.2 scalars, aliases bounded), `binding` (plain data → dataclasses, keys and types
checked), `overrides` (`--set` parsing and merging) and `checks` (values types cannot express).
`saved` compares a finished run's config.json with a config.
"""
from kold_span.config.binding import build_dataclass
from kold_span.config.choices import Problem, SnapMode, TaskKind
from kold_span.config.loading import config_from_dict, load_config
from kold_span.config.overrides import parse_key_value, parse_override
from kold_span.config.saved import REUSE_IGNORED_KEYS, saved_config_changes
from kold_span.config.yaml12 import read_yaml, yaml_load
from kold_span.config.schema import (AlignConfig, Config, ContextConfig, DataConfig, EncoderConfig, ModelConfig,
                                     PerspectiveConfig, ScratchEncoderConfig, TaskConfig, TrainerConfig)
from kold_span.errors import ConfigError

__all__ = ["AlignConfig", "Config", "ConfigError", "ContextConfig", "DataConfig", "EncoderConfig", "ModelConfig",
           "PerspectiveConfig", "Problem", "REUSE_IGNORED_KEYS", "ScratchEncoderConfig", "SnapMode", "TaskConfig",
           "TaskKind", "TrainerConfig", "build_dataclass", "config_from_dict", "load_config", "parse_key_value",
           "parse_override", "read_yaml", "saved_config_changes", "yaml_load"]
