"""Layer 1, config: experiment configs from YAML files split by concern, validated against a schema.

`choices` defines the task kinds, label problems and snap modes (str enums) every layer uses;
`schema` holds the dataclasses and the allowed values; `loading` reads the files, merges the
`defaults:` parts and `--set` overrides, and checks every value before any work starts.
"""
from kold_span.config.choices import Problem, SnapMode, TaskKind
from kold_span.config.loading import (REUSE_IGNORED_KEYS, build_dataclass, config_from_dict, load_config,
                                      parse_key_value, parse_override, read_yaml, saved_config_changes, yaml_load)
from kold_span.config.schema import (AlignConfig, Config, ContextConfig, DataConfig, EncoderConfig, ModelConfig,
                                     PerspectiveConfig, ScratchEncoderConfig, TaskConfig, TrainerConfig)
from kold_span.errors import ConfigError

__all__ = ["AlignConfig", "Config", "ConfigError", "ContextConfig", "DataConfig", "EncoderConfig", "ModelConfig",
           "PerspectiveConfig", "Problem", "REUSE_IGNORED_KEYS", "ScratchEncoderConfig", "SnapMode", "TaskConfig",
           "TaskKind", "TrainerConfig", "build_dataclass", "config_from_dict", "load_config", "parse_key_value",
           "parse_override", "read_yaml",
           "saved_config_changes", "yaml_load"]
