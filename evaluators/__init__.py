"""Task environments and evaluators for gepa-lab (the offline SkillCraft-sim families)."""
