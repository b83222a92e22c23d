"""A user's image classifier: a torchvision or timm model (no pretrained
weights: the GPU machine cannot download them) trained on Fashion-MNIST,
resized on the GPU to --size px and given 3 channels, for a fixed number of
steps. --freeze-backbone trains the classifier head alone (a fine-tune).

    python3 vision.py --model resnet50 --batch 64 --opt sgd --steps 2000
    python3 vision.py --model timm/deit_small_patch16_224 --batch 128 --opt adamw --bf16 --steps 2000
    python3 vision.py --model resnet18 --size 32 --batch 8 --steps 3 --device cpu    # a check on a CPU

Builders for colo's [job.model] (module:function, no arguments, 10
classes), one per model and one more with the backbone frozen:
vision:build_resnet50, vision:build_resnet50_frozen,
vision:build_timm_deit_small_patch16_224, ... (builder_name() makes them).
"""
import torch
import torch.nn.functional as F

import common

TORCHVISION = ["resnet18", "resnet34", "resnet50", "mobilenet_v3_large", "convnext_tiny", "efficientnet_b0",
               "vit_b_16"]
TIMM = ["resnet50", "deit_small_patch16_224", "convnext_nano", "efficientnet_b0"]


def freeze_backbone(model):
    """Leaves only the last nn.Linear (the classifier head of every model
    here) trainable."""
    for p in model.parameters():
        p.requires_grad_(False)
    head = [m for m in model.modules() if isinstance(m, torch.nn.Linear)][-1]
    for p in head.parameters():
        p.requires_grad_(True)
    return model


def build(name, frozen=False, classes=10):
    """torchvision's `name`, or timm's for "timm/NAME", randomly initialised."""
    if name.startswith("timm/"):
        import timm  # imported only for timm models: it adds a second of start-up

        model = timm.create_model(name[len("timm/"):], pretrained=False, num_classes=classes)
    else:
        import torchvision

        model = getattr(torchvision.models, name)(num_classes=classes)
    return freeze_backbone(model) if frozen else model


def builder_name(name, frozen=False):
    """The builder function of this module for model `name`."""
    return "build_" + name.replace("timm/", "timm_") + ("_frozen" if frozen else "")


def _builder(name, frozen):
    def build_model():
        return build(name, frozen)

    build_model.__name__ = builder_name(name, frozen)
    build_model.__doc__ = f"{name}{' with its backbone frozen' if frozen else ''}, 10 classes."
    return build_model


for _name in TORCHVISION + ["timm/" + n for n in TIMM]:
    for _frozen in (False, True):
        globals()[builder_name(_name, _frozen)] = _builder(_name, _frozen)


def main():
    p = common.parser(__doc__.splitlines()[0], batch=64, opt="sgd")
    p.add_argument("--model", default="resnet18", help="a torchvision model, or timm/NAME")
    p.add_argument("--size", type=int, default=224, help="image side in pixels")
    p.add_argument("--freeze-backbone", action="store_true", help="train the classifier head alone")
    args = p.parse_args()
    torch.manual_seed(args.seed)
    device = common.device_of(args)
    images, labels = common.fashion_on(device)
    model = build(args.model, args.freeze_backbone).to(device)
    opt = common.optimizer(args.opt, model.parameters(), args.lr)
    common.train(model, opt, lambda: common.image_batch(images, labels, args.batch, args.size),
                 lambda m, x, y: F.cross_entropy(m(x), y), args, device, args.batch)


if __name__ == "__main__":
    main()
