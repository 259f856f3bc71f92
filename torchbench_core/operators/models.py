"""The models whose operator inputs are recorded, and a user's own through ``module:factory``.

The built-in ones come from transformers (a well-kept library of real model
definitions), built from their default configurations with random weights:
nothing is downloaded. Each is BERT-base, GPT-2 small, ViT-base or ResNet-50 as published,
at a batch this 2-core machine trains in seconds. A factory returns
``(model, inputs)``: ``inputs`` a tuple of positional arguments or a dict of
keyword arguments.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

import torch

__all__ = ["MODELS", "load_factory"]

SEED = 0


def _transformers():
    try:
        import transformers
    except ImportError:
        raise RuntimeError("recording the built-in models needs transformers: pip install transformers") from None
    transformers.logging.set_verbosity_error()
    return transformers


def _language_model(config: str, model: str) -> tuple[torch.nn.Module, Any]:
    """A transformers language model at its default configuration, attention in its eager form (matmuls and
    softmax, as in PyTorch's logs), batch 2 of 128 tokens, labelled (its loss)."""
    tf = _transformers()
    torch.manual_seed(SEED)
    made = getattr(tf, config)(attn_implementation="eager")
    built = getattr(tf, model)(made).train()
    ids = torch.randint(0, made.vocab_size, (2, 128))
    return built, {"input_ids": ids, "labels": ids.clone()}


def _image_classifier(config: str, model: str, **options) -> tuple[torch.nn.Module, Any]:
    """A transformers image classifier (1000 classes) at its default configuration, batch 2 at 224 pixels."""
    tf = _transformers()
    torch.manual_seed(SEED)
    built = getattr(tf, model)(getattr(tf, config)(num_labels=1000, **options)).train()
    return built, {"pixel_values": torch.randn(2, 3, 224, 224), "labels": torch.randint(0, 1000, (2,))}


def bert() -> tuple[torch.nn.Module, Any]:
    """BertForMaskedLM (bert-base-uncased's configuration)."""
    return _language_model("BertConfig", "BertForMaskedLM")


def gpt2() -> tuple[torch.nn.Module, Any]:
    """GPT2LMHeadModel (GPT-2 small: causal attention, tanh GELU)."""
    return _language_model("GPT2Config", "GPT2LMHeadModel")


def vit() -> tuple[torch.nn.Module, Any]:
    """ViTForImageClassification (ViT-base/16), attention in its eager form."""
    return _image_classifier("ViTConfig", "ViTForImageClassification", attn_implementation="eager")


def resnet() -> tuple[torch.nn.Module, Any]:
    """ResNetForImageClassification (ResNet-50)."""
    return _image_classifier("ResNetConfig", "ResNetForImageClassification")


# log name -> factory; the logs are torchbench_core/operators/logs/<suite>/<name>_training.txt
MODELS: dict[str, dict[str, Callable[[], tuple[torch.nn.Module, Any]]]] = {
    "huggingface": {"BertForMaskedLM": bert, "GPT2LMHeadModel": gpt2, "ViTForImageClassification": vit,
                    "ResNetForImageClassification": resnet},
}


def load_factory(spec: str) -> Callable[[], tuple[torch.nn.Module, Any]]:
    """``package.module:function`` -> the function (ValueError with the reason if it cannot be found)."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"{spec!r}: expected module:factory, such as mypkg.models:make_model")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"{spec!r}: cannot import {module_name}: {e}") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise ValueError(f"{spec!r}: {module_name} has no callable {attribute}")
    return factory
