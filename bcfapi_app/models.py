"""Records of the BCF API that the issues do not already hold: the documents uploaded to a project."""

from django.db import models

from models_app.models import IfcModel, Project


class ProjectDocument(models.Model):
    """A document (any binary file) uploaded to a project through the BCF API (POST documents). Its bytes lie with
    the project's first IFC model, where imported BCF documents lie (issues_app.issue_files.document_path)."""

    guid = models.CharField(max_length=36)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="bcf_documents")
    model = models.ForeignKey(IfcModel, on_delete=models.CASCADE, related_name="+", help_text="the model whose folder holds the file")
    filename = models.CharField(max_length=255)
    description = models.CharField(max_length=1024, blank=True, default="")
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    author = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "guid"], name="one_document_guid_per_project")]
        ordering = ["created_at", "id"]

    def __str__(self):
        return f"{self.filename} ({self.guid})"
